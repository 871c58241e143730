/**
 * Every transport serves an exchange through the same front door (engine/serve.ts) with the same
 * plug-ins, so a model call is recognised whichever way it came in. MSW handlers used to wire
 * their own pipeline without the model-call observer: their model calls had no model or tokens.
 */
import { describe, expect, it, onTestFinished } from 'vitest'
import { createStorm } from '../../src/engine/storm.js'
import { answered, startModelUpstream, USAGE } from '../helpers/model-upstream.js'
import { through, TRANSPORTS } from '../helpers/transports.js'

describe('one model call, every transport', () => {
  it.each(TRANSPORTS)('records the provider, model and tokens of an OpenAI chat completion served through %s', async (transport) => {
    const upstream = await startModelUpstream()
    onTestFinished(() => upstream.close())
    const storm = createStorm({})
    const { base, init } = await through(transport, storm, upstream.url)

    const response = await fetch(`${base}/v1/chat/completions`, {
      ...init,
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer sk-test' },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }),
    } as RequestInit)
    expect(response.status).toBe(200)
    await response.json()

    const [call] = storm.report().calls
    expect(call?.outcome).toBe('response')
    expect(call?.model).toEqual({
      provider: 'openai',
      api: 'chat.completions',
      model: answered('gpt-4o-mini'),
      inputTokens: USAGE.chat.prompt_tokens,
      outputTokens: USAGE.chat.completion_tokens,
      streamed: false,
    })
  })
})
