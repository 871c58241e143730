import { describe, expect, it } from 'vitest'
import { recognizeModelCall } from './recognize-model-call.js'

const recognize = (method: string, url: string, headers: Record<string, string> = {}) => recognizeModelCall(method, new URL(url), headers)

describe('recognizeModelCall', () => {
  it('recognises OpenAI chat completions, Responses and Anthropic messages by method and path', () => {
    expect(recognize('POST', 'https://api.openai.com/v1/chat/completions')).toEqual({ provider: 'openai', api: 'chat.completions' })
    expect(recognize('POST', 'https://x.openai.azure.com/openai/deployments/d/chat/completions?api-version=1')).toEqual({ provider: 'openai', api: 'chat.completions' })
    expect(recognize('POST', 'https://api.openai.com/v1/responses')).toEqual({ provider: 'openai', api: 'responses' })
    expect(recognize('POST', 'https://api.anthropic.com/v1/messages')).toEqual({ provider: 'anthropic', api: 'messages' })
    expect(recognize('POST', 'http://gateway/anthropic/messages', { 'anthropic-version': '2023-06-01' })).toEqual({ provider: 'anthropic', api: 'messages' })
  })

  it('leaves other requests alone', () => {
    expect(recognize('GET', 'https://api.openai.com/v1/chat/completions')).toBeNull()
    expect(recognize('POST', 'https://api.openai.com/v1/embeddings')).toBeNull()
    expect(recognize('POST', 'https://api.anthropic.com/v1/messages/count_tokens')).toBeNull()
    expect(recognize('POST', 'http://tools.test/forum/messages')).toBeNull()
    expect(recognize('POST', 'http://tools.test/survey/responses')).toBeNull()
  })
})
