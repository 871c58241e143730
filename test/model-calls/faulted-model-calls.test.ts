/**
 * A model call faulted before it reaches the provider still records the model it asked for and
 * whether it asked for a stream (issue #14, item 7), on every transport; the request body is read
 * without holding it back from the provider when the call is forwarded.
 */
import { describe, expect, it } from 'vitest'
import { modelScenarios, type ModelScenario } from '../helpers/model-scenario.js'
import { TRANSPORTS } from '../helpers/transports.js'
import { answered } from '../helpers/model-upstream.js'

const scenarios = modelScenarios()

const CHAT = 'POST /v1/chat/completions'

/** POST a chat completion request as raw JSON; `padding` grows the prompt (bytes). */
async function chat(s: ModelScenario, body: Record<string, unknown>, padding = 0): Promise<number> {
  const messages = [{ role: 'user', content: 'Say hello.' + 'x'.repeat(padding) }]
  // Global fetch: in-process interception sees it (the SDK tests hand it the same options).
  const response = await fetch(`${s.base}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer sk-test' },
    body: JSON.stringify({ ...body, messages }),
    ...(s.fetchOptions as RequestInit),
  })
  await response.arrayBuffer()
  return response.status
}

for (const transport of TRANSPORTS) {
  describe(`model calls faulted before the provider (${transport})`, () => {
    it.each([
      ['rate_limit', 429],
      // The kinds' statuses, the same on every route; the bodies are the provider's (provider-errors.test.ts).
      ['unavailable', 503],
      ['overloaded', 503],
      ['timeout', 504],
    ] as const)('%s records the requested model and stream flag', async (kind, status) => {
      const scenario = await scenarios.start(transport, { rules: [{ name: 'fault', route: CHAT, kind, calls: [1] }] })
      expect(await chat(scenario, { model: 'gpt-4o-mini', stream: true })).toBe(status)
      const call = (await scenario.settled()).calls[0]
      expect(call?.injected).toBe(true)
      expect(call?.model).toEqual({ provider: 'openai', api: 'chat.completions', model: 'gpt-4o-mini', inputTokens: null, outputTokens: null, streamed: true })
      expect(scenario.upstream.requests).toHaveLength(0)
    })

    it('reads the model from a large faulted request, and the next call on the connection is forwarded whole', async () => {
      const scenario = await scenarios.start(transport, { rules: [{ name: 'busy', route: CHAT, kind: 'rate_limit', calls: [1] }] })
      expect(await chat(scenario, { model: 'gpt-big', stream: false }, 512 * 1024)).toBe(429)
      expect(await chat(scenario, { model: 'gpt-next' }, 512 * 1024)).toBe(200)
      const calls = (await scenario.settled()).calls
      expect(calls.map((c) => [c.status, c.model?.model, c.model?.streamed])).toEqual([
        [429, 'gpt-big', false],
        [200, answered('gpt-next'), false],
      ])
      const forwarded = scenario.upstream.requests[0]?.body as { model: string; messages: Array<{ content: string }> }
      expect(forwarded.model).toBe('gpt-next')
      expect(forwarded.messages[0]?.content).toHaveLength('Say hello.'.length + 512 * 1024)
    })
  })
}
