import { describe, expect, it } from 'vitest'
import { modelScenarios } from '../helpers/model-scenario.js'
import { TRANSPORTS } from '../helpers/transports.js'

const scenarios = modelScenarios()

const GAP_MS = 200

/** Read an event stream, noting when (performance.now()) each `data:` event arrived. */
async function arrivals(response: Response): Promise<number[]> {
  const times: number[] = []
  const decoder = new TextDecoder()
  let text = ''
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
    text += decoder.decode(chunk, { stream: true })
    const complete = text.split('\n\n').length - 1
    while (times.length < complete) times.push(performance.now())
  }
  return times
}

for (const transport of TRANSPORTS) {
  describe(`event streams flow unbuffered (${transport})`, () => {
    it.each([
      ['a plain SSE response with no rule', 'GET', '/ticks?count=5', []],
      ['a streamed model call (observed for metadata)', 'POST', '/v1/chat/completions', []],
      ['a stream under a stream fault that never fires', 'GET', '/ticks?count=5', [{ name: 'drop', route: 'GET /ticks', kind: 'drop_terminal' }]],
    ] as const)('delivers each event of %s as the upstream sends it, 200 ms apart', async (_name, method, target, rules) => {
      const scenario = await scenarios.start(transport, { rules: [...rules] }, { gapMs: GAP_MS })
      const init = { method, ...scenario.fetchOptions, ...(method === 'POST' ? { headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'gpt-x', stream: true, messages: [] }) } : {}) }
      const response = await fetch(`${scenario.base}${target}`, init as RequestInit)
      expect(response.headers.get('content-type')).toBe('text/event-stream')
      const seen = await arrivals(response)
      const sent = scenario.upstream.sent.events
      expect(seen.length).toBe(sent.length)
      expect(sent.length).toBeGreaterThanOrEqual(5)
      // The first event is read long before the upstream sends the last one …
      expect(sent[sent.length - 1]! - seen[0]!).toBeGreaterThan((sent.length - 2) * GAP_MS)
      // … and every event arrives close to when it was sent.
      seen.forEach((at, i) => expect(at - sent[i]!).toBeLessThan(GAP_MS * 0.75))
    })
  })
}
