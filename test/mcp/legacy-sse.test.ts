import { McpError } from '@modelcontextprotocol/sdk/types.js'
import { describe, expect, it } from 'vitest'
import { startProxy } from '../../src/proxy/proxy-server.js'
import { connectLegacyMcpClient, startMcpServer, type TestMcpServer } from '../helpers/mcp-server.js'
import { mcpScenario } from '../helpers/mcp-scenario.js'
import { closing } from '../helpers/teardown.js'
import type { Transport } from '../helpers/transports.js'

const LEGACY = { stateful: true, json: false, legacy: true }

describe('the legacy HTTP+SSE transport (2024-11-05) through the proxy', () => {
  for (const transport of ['reverse', 'forward', 'https', 'intercept'] as const satisfies readonly Transport[]) {
    it(`names the POSTed messages as MCP and targets one tool, the handshake not shifting its schedule (${transport})`, async () => {
      const scenario = await mcpScenario(transport, { seed: 7, rules: [{ name: 'second-quote', route: 'tools/call get_quote', kind: 'tool_error', message: 'quote service down', calls: [2] }] }, LEGACY)
      const { client } = await scenario.connectLegacy()
      await client.listTools()
      const first = await client.callTool({ name: 'get_quote', arguments: { order_id: 'o-1' } })
      await client.callTool({ name: 'create_shipment', arguments: { order_id: 'o-1' } })
      const second = await client.callTool({ name: 'get_quote', arguments: { order_id: 'o-2' } })
      expect(first.isError).toBeFalsy()
      expect(second).toMatchObject({ isError: true, content: [{ type: 'text', text: 'quote service down' }] })
      expect(scenario.server.received).toEqual(['initialize', 'notifications/initialized', 'tools/list', 'tools/call get_quote', 'tools/call create_shipment'])
      const calls = scenario.report().calls
      expect(calls.map((call) => call.route)).toEqual(['GET /sse', 'initialize', 'notifications/initialized', 'tools/list', 'tools/call get_quote', 'tools/call create_shipment', 'tools/call get_quote'])
      const quotes = calls.filter((call) => call.route === 'tools/call get_quote')
      const session = calls[1]?.mcp?.session
      expect(session).toMatch(/^[0-9a-f-]{36}$/)
      expect(quotes.map((call) => [call.ordinal, call.status, call.injected, call.executed, call.mcp?.id, call.mcp?.session, call.mcp?.outcome])).toEqual([
        [1, 202, false, true, 2, session, 'result'],
        [2, 202, true, false, 4, session, 'isError'],
      ])
      expect(calls.find((call) => call.route === 'initialize')?.mcp).toMatchObject({ method: 'initialize', tool: null, id: 0, outcome: 'result' })
    })
  }

  for (const transport of ['reverse', 'forward', 'intercept'] as const satisfies readonly Transport[]) {
    it(`answers rpc_error on the session stream: the SDK client raises McpError with the code, the server never sees the call (${transport})`, async () => {
      const scenario = await mcpScenario(transport, { rules: [{ name: 'timeout', route: 'tools/call create_shipment', kind: 'rpc_error', code: -32001, message: 'Request timed out' }] }, LEGACY)
      const { client } = await scenario.connectLegacy()
      const error = await client.callTool({ name: 'create_shipment', arguments: { order_id: 'o-1' } }).catch((caught: unknown) => caught)
      expect(error).toBeInstanceOf(McpError)
      expect(error).toMatchObject({ code: -32001, message: 'MCP error -32001: Request timed out' })
      expect(scenario.server.commits).toEqual([])
      expect(scenario.server.received).not.toContain('tools/call create_shipment')
      expect(scenario.report().calls.at(-1)).toMatchObject({ route: 'tools/call create_shipment', status: 202, injected: true, mcp: { outcome: 'error', errorCode: -32001 } })
    })

    it(`loses the answer event after the tool committed: the stream is reset and the call rejects on its timeout (${transport})`, async () => {
      const scenario = await mcpScenario(transport, { rules: [{ name: 'lost-ack', route: 'tools/call create_shipment', kind: 'response_lost', calls: [1] }] }, LEGACY)
      const { client } = await scenario.connectLegacy()
      const errors: unknown[] = []
      client.onerror = (error) => errors.push(error)
      const error = await client.callTool({ name: 'create_shipment', arguments: { order_id: 'o-1' } }, undefined, { timeout: 1500 }).catch((caught: unknown) => caught)
      expect(error).toBeInstanceOf(McpError)
      expect((error as McpError).code).toBe(-32001)
      expect(scenario.server.commits).toEqual(['o-1'])
      // The transport saw its stream break (the EventSource then reconnects: a new session).
      expect(errors.some((seen) => (seen as Error).message.startsWith('SSE error'))).toBe(true)
      const calls = scenario.report().calls
      const lost = calls.find((call) => call.route === 'tools/call create_shipment')
      expect(lost).toMatchObject({ status: 202, executed: true, injected: true, mcp: { outcome: null } })
      // The tool's commit is reported against the call whose answer was lost.
      await expect.poll(() => scenario!.report().effects.map((effect) => [effect.name, effect.key, effect.call])).toEqual([['shipment', 'o-1', lost!.id]])
      expect(calls.find((call) => call.route === 'GET /sse')).toMatchObject({ outcome: 'error', error: 'ECONNRESET' })
    })
  }

  it('answers 429, 503, a gateway timeout or a reset to the POST: the SDK client\'s call rejects at once, the server never sees it', async () => {
    const scenario = await mcpScenario('reverse', {
      rules: [
        { name: 'busy', route: 'tools/call get_quote', kind: 'rate_limit', calls: [1] },
        { name: 'down', route: 'tools/call get_quote', kind: 'unavailable', calls: [2] },
        { name: 'slow', route: 'tools/call get_quote', kind: 'timeout', calls: [3] },
        { name: 'gone', route: 'tools/call get_quote', kind: 'reset', calls: [4] },
      ],
    }, LEGACY)
    const { client } = await scenario.connectLegacy()
    const messages: string[] = []
    for (let i = 0; i < 4; i++) messages.push(await client.callTool({ name: 'get_quote', arguments: { order_id: 'o-1' } }).then(() => 'resolved', (error: Error) => error.message))
    expect(messages.map((message) => /^Error POSTing to endpoint \(HTTP (\d+)\)/.exec(message)?.[1] ?? message)).toEqual(['429', '503', '504', 'fetch failed'])
    expect(scenario.server.received).not.toContain('tools/call get_quote')
    expect(scenario.report().calls.filter((call) => call.mcp?.tool === 'get_quote').map((call) => [call.status, call.injected, call.mcp?.outcome])).toEqual([
      [429, true, null],
      [503, true, null],
      [504, true, null],
      [null, true, null],
    ])
  })

  it('delays the answer event, not the POST: the server runs the call at once, the client gets its result later', async () => {
    const scenario = await mcpScenario('reverse', { rules: [{ name: 'slow', route: 'tools/call get_quote', kind: 'latency', delay: 1 }] }, LEGACY)
    const { client } = await scenario.connectLegacy()
    const started = performance.now()
    const result = await client.callTool({ name: 'get_quote', arguments: { order_id: 'o-1' } })
    expect(performance.now() - started).toBeGreaterThanOrEqual(980)
    expect(result.content).toEqual([{ type: 'text', text: JSON.stringify({ order_id: 'o-1', price: 12.5 }) }])
    const call = scenario.report().calls.find((c) => c.route === 'tools/call get_quote')
    expect(call).toMatchObject({ status: 202, executed: true, injected: true, mcp: { outcome: 'result' } })
    // The POST was forwarded and accepted before the delay ran out (the margin is for a loaded machine).
    expect(call!.elapsed).toBeLessThan(0.9)
  })

  it('drifts the structuredContent of the answer event, so the SDK client refuses it against the tool\'s outputSchema', async () => {
    const scenario = await mcpScenario('reverse', { seed: 3, rules: [{ name: 'drift', route: 'tools/call track_shipment', kind: 'schema_drift', fields: ['eta_days'] }] }, LEGACY)
    const { client } = await scenario.connectLegacy()
    await client.listTools()
    const error = await client.callTool({ name: 'track_shipment', arguments: { shipment_id: 'shp_1' } }, undefined, { timeout: 3000 }).catch((caught: unknown) => caught)
    expect(error).toBeInstanceOf(McpError)
    expect((error as McpError).message).toContain('Structured content does not match the tool\'s output schema')
    expect(scenario.report().calls.find((c) => c.route === 'tools/call track_shipment')).toMatchObject({ status: 202, injected: true, mcp: { id: 2, outcome: 'result' } })
    expect(scenario.report().coverage.drift).toEqual({ eligible: 1, selected: 1, triggered: 1 })
  })

  it('learns no endpoint with detection off: the POSTs stay plain HTTP', async () => {
    const scenario = await mcpScenario('reverse', { mcp: { detect: false }, rules: [] }, LEGACY)
    const { client } = await scenario.connectLegacy()
    await client.callTool({ name: 'get_quote', arguments: { order_id: 'o-1' } })
    expect(new Set(scenario.report().calls.map((call) => call.route))).toEqual(new Set(['GET /sse', 'POST /messages']))
  })

  it('forwards a fault on an answer whose session stream the proxy never saw (not triggered), with the endpoint declared', async () => {
    const server: TestMcpServer = closing(await startMcpServer(LEGACY))
    const proxy = closing(await startProxy({ targets: [server.origin], config: { mcp: { endpoints: ['/messages'] }, rules: [{ name: 'broken', route: 'tools/call get_quote', kind: 'tool_error' }] } }))
    // The stream comes straight from the server; only the POSTs go through the proxy.
    const viaProxy = ((input: string | URL, init?: RequestInit) => fetch(String(input).replace(server.origin, proxy.url), init)) as typeof fetch
    const { client } = await connectLegacyMcpClient(server.url, undefined, viaProxy)
    closing(client)
    const result = await client.callTool({ name: 'get_quote', arguments: { order_id: 'o-1' } }, undefined, { timeout: 3000 })
    expect(result.isError).toBeFalsy()
    expect(server.received).toContain('tools/call get_quote')
    const report = proxy.storm.report()
    expect(report.coverage.broken).toEqual({ eligible: 1, selected: 1, triggered: 0 })
    expect(report.calls.at(-1)).toMatchObject({ route: 'tools/call get_quote', status: 202, injected: false, executed: true, mcp: { tool: 'get_quote', session: expect.any(String) } })
  })
})
