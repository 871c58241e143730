import http from 'node:http'
import { describe, expect, it } from 'vitest'
import type { ExchangeObserver } from '../../src/engine/exchange-flow.js'
import type { StormConfigInput } from '../../src/engine/schema/config.js'
import { modelScenarios, type ModelScenario } from '../helpers/model-scenario.js'
import { TRANSPORTS, type Transport } from '../helpers/transports.js'

const scenarios = modelScenarios()

const rule = (kind: string, route: string, extra: Record<string, unknown> = {}): StormConfigInput => ({ rules: [{ name: 'fault', route, kind, ...extra } as never] })

/** Read a body to its end or its failure, noting each chunk's arrival. */
async function readBody(response: Response): Promise<{ text: string; error: Error | null; chunks: Array<{ at: number; text: string }> }> {
  const chunks: Array<{ at: number; text: string }> = []
  const decoder = new TextDecoder()
  try {
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) chunks.push({ at: performance.now(), text: decoder.decode(chunk, { stream: true }) })
    return { text: chunks.map((c) => c.text).join(''), error: null, chunks }
  } catch (error) {
    return { text: chunks.map((c) => c.text).join(''), error: error as Error, chunks }
  }
}

const ticks = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => `data: {"tick":${from + i}}\n\n`).join('')

const chatRequest = { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'gpt-x', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'hi' }] }) }

/** A node:http GET on this transport (absolute-form through the proxy in forward mode). */
function nodeGet(transport: Transport, s: ModelScenario, target: string): Promise<{ status?: number; body: string; error?: NodeJS.ErrnoException }> {
  return new Promise((resolve) => {
    const url = new URL(target, s.base)
    const proxy = s.proxy ? new URL(s.proxy.url) : null
    const options = transport === 'forward' && proxy ? { host: proxy.hostname, port: proxy.port, path: url.href, headers: { host: url.host } } : { host: url.hostname, port: url.port, path: url.pathname + url.search }
    let body = ''
    let status: number | undefined
    const req = http.get(options, (res) => {
      status = res.statusCode
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => (body += chunk))
      res.on('end', () => resolve({ status, body }))
      res.on('error', (error: NodeJS.ErrnoException) => resolve({ status, body, error }))
    })
    req.on('error', (error: NodeJS.ErrnoException) => resolve({ status, body, error }))
  })
}

for (const transport of TRANSPORTS) {
  describe(`stream faults (${transport})`, () => {
    it('cuts an event stream after `after` events: the body fails as "terminated" and the report says where', async () => {
      const scenario = await scenarios.start(transport, rule('stream_cut', 'GET /ticks', { after: 2 }))
      const response = await fetch(`${scenario.base}/ticks?count=5`, scenario.fetchOptions as RequestInit)
      expect(response.status).toBe(200)
      const { text, error } = await readBody(response)
      expect(text).toBe(ticks(1, 2))
      expect(error).toBeInstanceOf(TypeError)
      expect(error?.message).toBe('terminated')
      const report = await scenario.settled()
      expect(report.calls[0]).toMatchObject({ kind: 'stream_cut', phase: 'on-response', injected: true, executed: true, outcome: 'error', status: 200, error: 'STREAM_CUT', cut: { events: 2, bytes: Buffer.byteLength(ticks(1, 2)) } })
      expect(report.coverage.fault).toEqual({ eligible: 1, selected: 1, triggered: 1 })
    })

    it('cuts a node:http response mid-body: the response fails with "aborted"', async () => {
      const scenario = await scenarios.start(transport, rule('stream_cut', 'GET /ticks', { after: 1 }))
      const result = await nodeGet(transport, scenario, '/ticks?count=3')
      expect(result.status).toBe(200)
      expect(result.body).toBe(ticks(1, 1))
      expect(result.error?.message).toBe('aborted')
      expect(result.error?.code).toBe('ECONNRESET')
    })

    it('relays a stream that ends before the cut point whole and does not count as triggered', async () => {
      const scenario = await scenarios.start(transport, rule('stream_cut', 'GET /ticks', { after: 5 }))
      const { text, error } = await readBody(await fetch(`${scenario.base}/ticks?count=5`, scenario.fetchOptions as RequestInit))
      expect(error).toBeNull()
      expect(text).toBe(ticks(1, 5))
      const report = await scenario.settled()
      expect(report.calls[0]).toMatchObject({ injected: false, outcome: 'response', status: 200 })
      expect(report.calls[0]?.cut).toBeUndefined()
      expect(report.coverage.fault?.triggered).toBe(0)
    })

    it('stalls after `after` events, holds the connection `delay` seconds, then closes it', async () => {
      const scenario = await scenarios.start(transport, rule('stream_stall', 'GET /ticks', { after: 1, delay: 0.3 }))
      const started = performance.now()
      const { text, error, chunks } = await readBody(await fetch(`${scenario.base}/ticks?count=5`, scenario.fetchOptions as RequestInit))
      expect(text).toBe(ticks(1, 1))
      expect(error?.message).toBe('terminated')
      expect(performance.now() - chunks[0]!.at).toBeGreaterThanOrEqual(280)
      expect(performance.now() - started).toBeLessThan(2_000)
      expect((await scenario.settled()).calls[0]).toMatchObject({ injected: true, outcome: 'error', status: 200, error: 'STREAM_CUT', cut: { events: 1 } })
    })

    it('stalls until the client gives up: its own timeout ends the read', async () => {
      const scenario = await scenarios.start(transport, rule('stream_stall', 'GET /ticks', { after: 1 }))
      const response = await fetch(`${scenario.base}/ticks?count=5`, { ...scenario.fetchOptions, signal: AbortSignal.timeout(300) } as RequestInit)
      const { text, error } = await readBody(response)
      expect(text).toBe(ticks(1, 1))
      expect(error?.name).toBe('TimeoutError')
      expect((await scenario.settled()).calls[0]).toMatchObject({ injected: true, outcome: 'cancelled', status: 200, error: 'CLIENT_ABORTED', cut: { events: 1 } })
    })

    it('drops the final [DONE] and ends the body cleanly', async () => {
      const scenario = await scenarios.start(transport, rule('drop_terminal', 'POST /v1/chat/completions'))
      const { text, error } = await readBody(await fetch(`${scenario.base}/v1/chat/completions`, { ...chatRequest, ...scenario.fetchOptions } as RequestInit))
      expect(error).toBeNull()
      expect(text).not.toContain('[DONE]')
      expect(text).toContain('"usage":{"prompt_tokens":11')
      const events = text.split('\n\n').length - 1
      const report = await scenario.settled()
      expect(report.calls[0]).toMatchObject({ injected: true, outcome: 'response', status: 200, error: null, cut: { events, bytes: Buffer.byteLength(text) } })
    })

    it('does not count drop_terminal as triggered on a stream without a final event', async () => {
      const scenario = await scenarios.start(transport, rule('drop_terminal', 'GET /ticks'))
      const { text } = await readBody(await fetch(`${scenario.base}/ticks?count=3`, scenario.fetchOptions as RequestInit))
      expect(text).toBe(ticks(1, 3))
      expect((await scenario.settled()).coverage.fault?.triggered).toBe(0)
    })

    it('slows a stream down by `delay` seconds between events', async () => {
      const scenario = await scenarios.start(transport, rule('slow_stream', 'GET /ticks', { delay: 0.1 }))
      const { text, chunks } = await readBody(await fetch(`${scenario.base}/ticks?count=4`, scenario.fetchOptions as RequestInit))
      expect(text).toBe(ticks(1, 4))
      expect(chunks).toHaveLength(4)
      // Measured from the first event, so a chunk that reaches a busy client late does not make the
      // next gap look short: without the fault all four arrive within a few milliseconds.
      for (let i = 1; i < chunks.length; i++) expect(chunks[i]!.at - chunks[0]!.at).toBeGreaterThanOrEqual(i * 100 - 25)
      const report = await scenario.settled()
      expect(report.calls[0]).toMatchObject({ injected: true, outcome: 'response', status: 200 })
      expect(report.calls[0]?.cut).toBeUndefined()
    })

    it('truncates a plain body after `after` bytes', async () => {
      const scenario = await scenarios.start(transport, rule('truncate', 'GET /plain', { after: 100 }))
      const { text, error } = await readBody(await fetch(`${scenario.base}/plain?bytes=1000`, scenario.fetchOptions as RequestInit))
      expect(text).toBe('abcdefghij'.repeat(10))
      expect(error?.message).toBe('terminated')
      expect((await scenario.settled()).calls[0]).toMatchObject({ injected: true, outcome: 'error', status: 200, error: 'STREAM_CUT', cut: { events: null, bytes: 100 } })
    })

    it('relays a body no longer than `after` bytes whole under truncate, not triggered', async () => {
      const scenario = await scenarios.start(transport, rule('truncate', 'GET /plain', { after: 1000 }))
      const { text, error } = await readBody(await fetch(`${scenario.base}/plain?bytes=1000`, scenario.fetchOptions as RequestInit))
      expect(error).toBeNull()
      expect(text).toHaveLength(1000)
      expect((await scenario.settled()).coverage.fault?.triggered).toBe(0)
    })

    it.each(['stream_cut', 'stream_stall', 'drop_terminal', 'slow_stream'])('relays a body that is not an event stream unchanged under %s, not triggered', async (kind) => {
      const scenario = await scenarios.start(transport, rule(kind, 'GET /plain', { ...(kind === 'slow_stream' || kind === 'drop_terminal' ? {} : { after: 0 }), delay: 0.2 }))
      const { text, error } = await readBody(await fetch(`${scenario.base}/plain?bytes=300`, scenario.fetchOptions as RequestInit))
      expect(error).toBeNull()
      expect(text).toHaveLength(300)
      expect((await scenario.settled()).coverage.fault?.triggered).toBe(0)
    })

    it('shows observers the faulted stream chunk by chunk, as the client received it', async () => {
      const client: string[] = []
      const heads: boolean[] = []
      const observer: ExchangeObserver = {
        onClientHead: (_exchange, _status, _headers, same) => void heads.push(same),
        onClientBody: (_exchange, chunk) => void client.push(chunk ? Buffer.from(chunk).toString('utf8') : '<end>'),
      }
      const scenario = await scenarios.start(transport, rule('stream_cut', 'GET /ticks', { after: 2 }), { observer })
      const { text } = await readBody(await fetch(`${scenario.base}/ticks?count=4`, scenario.fetchOptions as RequestInit))
      await scenario.settled()
      expect(heads).toEqual([false])
      expect(client).toEqual([`data: {"tick":1}\n\n`, `data: {"tick":2}\n\n`, '<end>'])
      expect(client.slice(0, -1).join('')).toBe(text)
    })

    it('tells observers where the body ended when the client leaves a stalled stream', async () => {
      const client: string[] = []
      const observer: ExchangeObserver = { onClientBody: (_exchange, chunk) => void client.push(chunk ? Buffer.from(chunk).toString('utf8') : '<end>') }
      const scenario = await scenarios.start(transport, rule('stream_stall', 'GET /ticks', { after: 1 }), { observer })
      await readBody(await fetch(`${scenario.base}/ticks?count=4`, { ...scenario.fetchOptions, signal: AbortSignal.timeout(200) } as RequestInit))
      await scenario.settled()
      expect(client).toEqual([`data: {"tick":1}\n\n`, '<end>'])
    })
  })
}
