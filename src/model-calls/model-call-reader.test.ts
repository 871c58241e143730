import zlib from 'node:zlib'
import { describe, expect, it } from 'vitest'
import { ModelCallReader } from './model-call-reader.js'
import type { ModelEndpoint } from './recognize-model-call.js'

const SSE = { 'content-type': 'text/event-stream; charset=utf-8' }
const JSON_TYPE = { 'content-type': 'application/json' }
const sse = (events: Array<{ event?: string; data: unknown }>) => events.map((e) => `${e.event ? `event: ${e.event}\n` : ''}data: ${typeof e.data === 'string' ? e.data : JSON.stringify(e.data)}\n\n`).join('')

/** Read one call, feeding the response in chunks of `size` bytes. */
function read(endpoint: ModelEndpoint, request: unknown, headers: Record<string, string>, body: string | Buffer, size = Infinity) {
  const reader = new ModelCallReader(endpoint)
  reader.request(Buffer.from(JSON.stringify(request)))
  reader.request(null)
  reader.responseHead(200, headers)
  const bytes = Buffer.isBuffer(body) ? body : Buffer.from(body)
  const step = Math.min(size, bytes.length)
  for (let at = 0; at < bytes.length; at += step) reader.responseBody(bytes.subarray(at, at + step))
  reader.responseBody(null)
  return reader.call
}

const CHAT: ModelEndpoint = { provider: 'openai', api: 'chat.completions' }
const RESPONSES: ModelEndpoint = { provider: 'openai', api: 'responses' }
const MESSAGES: ModelEndpoint = { provider: 'anthropic', api: 'messages' }

const chatStream = (usage: boolean) =>
  sse([
    { data: { id: 'c', object: 'chat.completion.chunk', model: 'gpt-x-1', choices: [{ index: 0, delta: { content: 'the usage: {"prompt_tokens": 999}' } }], usage: null } },
    ...(usage ? [{ data: { id: 'c', object: 'chat.completion.chunk', model: 'gpt-x-1', choices: [], usage: { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 } } }] : []),
    { data: '[DONE]' },
  ])

const anthropicStream = sse([
  { event: 'message_start', data: { type: 'message_start', message: { id: 'm', model: 'claude-x-1', content: [], usage: { input_tokens: 21, cache_creation_input_tokens: 4, cache_read_input_tokens: 8, output_tokens: 1 } } } },
  { event: 'content_block_delta', data: { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: '"usage": {"output_tokens": 1000}' } } },
  { event: 'message_delta', data: { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 9 } } },
  { event: 'message_stop', data: { type: 'message_stop' } },
])

const responsesStream = sse([
  { event: 'response.created', data: { type: 'response.created', response: { id: 'r', model: 'gpt-r-1', status: 'in_progress', usage: null } } },
  { event: 'response.output_text.delta', data: { type: 'response.output_text.delta', delta: 'hi' } },
  { event: 'response.completed', data: { type: 'response.completed', response: { id: 'r', model: 'gpt-r-1', status: 'completed', output: [{ content: [{ text: 'hi' }] }], usage: { input_tokens: 13, output_tokens: 5, total_tokens: 18 } } } },
])

describe('ModelCallReader', () => {
  it('reads a streamed OpenAI chat with include_usage from its usage chunk, at every chunk size', () => {
    const body = chatStream(true)
    for (let size = 1; size <= body.length; size += 7) {
      expect(read(CHAT, { model: 'gpt-x', stream: true }, SSE, body, size)).toEqual({ provider: 'openai', api: 'chat.completions', model: 'gpt-x-1', inputTokens: 11, outputTokens: 7, streamed: true })
    }
  })

  it('leaves the tokens of an OpenAI chat stream without usage null, not zero', () => {
    expect(read(CHAT, { model: 'gpt-x', stream: true }, SSE, chatStream(false))).toMatchObject({ inputTokens: null, outputTokens: null, streamed: true })
  })

  it('says usage is missing from an answer that reached its end without it, and only then, at every chunk size', () => {
    const noUsage = chatStream(false)
    const json = JSON.stringify({ id: 'c', model: 'gpt-x-1', choices: [{ message: { content: '{"usage": 1}' } }] })
    for (let size = 1; size <= noUsage.length; size += 7) expect(read(CHAT, { model: 'gpt-x', stream: true }, SSE, noUsage, size).usageMissing).toBe(true)
    for (let size = 1; size <= json.length; size += 7) expect(read(CHAT, { model: 'gpt-x' }, JSON_TYPE, json, size).usageMissing).toBe(true)
    expect(read(CHAT, { model: 'gpt-x' }, { ...JSON_TYPE, 'content-encoding': 'gzip' }, zlib.gzipSync(json)).usageMissing).toBe(true)
    // Broken off before the end (before [DONE], inside the JSON body): unknown how it would have ended.
    expect(read(CHAT, { model: 'gpt-x', stream: true }, SSE, noUsage.slice(0, noUsage.indexOf('data: [DONE]'))).usageMissing).toBeUndefined()
    expect(read(CHAT, { model: 'gpt-x' }, JSON_TYPE, json.slice(0, -1)).usageMissing).toBeUndefined()
    // An Anthropic stream cut after message_start has its counts; one whose message_stop came without usage has none.
    expect(read(MESSAGES, { model: 'claude-x', stream: true }, SSE, anthropicStream).usageMissing).toBeUndefined()
    const bare = sse([{ event: 'message_stop', data: { type: 'message_stop' } }])
    expect(read(MESSAGES, { model: 'claude-x', stream: true }, SSE, bare)).toMatchObject({ inputTokens: null, usageMissing: true })
    expect(read(CHAT, { model: 'gpt-x', stream: true }, SSE, chatStream(true)).usageMissing).toBeUndefined()
  })

  it('adds cache reads and writes to Anthropic input tokens and takes the output from message_delta', () => {
    for (let size = 1; size <= anthropicStream.length; size += 5) {
      expect(read(MESSAGES, { model: 'claude-x', stream: true }, SSE, anthropicStream, size)).toEqual({ provider: 'anthropic', api: 'messages', model: 'claude-x-1', inputTokens: 33, outputTokens: 9, streamed: true })
    }
  })

  it('reads a streamed Responses call from response.completed', () => {
    expect(read(RESPONSES, { model: 'gpt-r', stream: true }, SSE, responsesStream, 3)).toEqual({ provider: 'openai', api: 'responses', model: 'gpt-r-1', inputTokens: 13, outputTokens: 5, streamed: true })
  })

  it('reads non-streamed JSON bodies, plain or gzip-encoded', () => {
    const chat = JSON.stringify({ id: 'c', model: 'gpt-x-1', choices: [{ message: { content: 'x' } }], usage: { prompt_tokens: 11, completion_tokens: 7 } })
    expect(read(CHAT, { model: 'gpt-x' }, JSON_TYPE, chat, 4)).toEqual({ provider: 'openai', api: 'chat.completions', model: 'gpt-x-1', inputTokens: 11, outputTokens: 7, streamed: false })
    const message = JSON.stringify({ id: 'm', model: 'claude-x-1', usage: { input_tokens: 21, cache_creation_input_tokens: 4, cache_read_input_tokens: 8, output_tokens: 9 } })
    expect(read(MESSAGES, { model: 'claude-x' }, { ...JSON_TYPE, 'content-encoding': 'gzip' }, zlib.gzipSync(message), 10)).toMatchObject({ model: 'claude-x-1', inputTokens: 33, outputTokens: 9 })
    const response = JSON.stringify({ id: 'r', model: 'gpt-r-1', usage: { input_tokens: 13, output_tokens: 5 } })
    expect(read(RESPONSES, { model: 'gpt-r' }, { ...JSON_TYPE, 'content-encoding': 'br' }, zlib.brotliCompressSync(response))).toMatchObject({ model: 'gpt-r-1', inputTokens: 13, outputTokens: 5 })
  })

  it('falls back to the requested model when the answer names none, and keeps no content', () => {
    const reader = new ModelCallReader(CHAT)
    reader.request(Buffer.from('{"messages":[{"role":"user","content":"secret prompt"}],"model":"gpt-x","stream":true}'))
    reader.request(null)
    expect(reader.call).toEqual({ provider: 'openai', api: 'chat.completions', model: 'gpt-x', inputTokens: null, outputTokens: null, streamed: true })
    expect(JSON.stringify(reader.call)).not.toContain('secret')
  })
})
