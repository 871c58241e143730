import { describe, expect, it } from 'vitest'
import { mcpScenario } from '../helpers/mcp-scenario.js'
import { EVERY_TRANSPORT } from '../helpers/transports.js'


const text = (result: Record<string, unknown>) => (result.content as Array<{ text: string }>)[0]?.text

for (const transport of EVERY_TRANSPORT) {
  describe(`MCP route names (${transport})`, () => {
    it('names each MCP request by method and tool, so a tool rule counts only that tool\'s calls', async () => {
      const scenario = await mcpScenario(transport, { seed: 7, rules: [{ name: 'second-create', route: 'tools/call create_*', kind: 'tool_error', calls: [2], message: 'Carrier API down' }] })
      const { client } = await scenario.connect()
      await client.listTools()
      const first = await client.callTool({ name: 'create_shipment', arguments: { order_id: 'o-1' } })
      await client.listTools()
      await client.callTool({ name: 'get_quote', arguments: { order_id: 'o-2' } })
      await client.listTools()
      const second = await client.callTool({ name: 'create_shipment', arguments: { order_id: 'o-2' } })

      expect(first.isError).toBeFalsy()
      expect(second).toEqual({ content: [{ type: 'text', text: 'Carrier API down' }], isError: true })
      // The failed call never reached the tool.
      expect(scenario.server.commits).toEqual(['o-1'])
      const report = scenario.report()
      const mcp = report.calls.filter((call) => call.mcp)
      expect(mcp.map((call) => [call.route, call.ordinal, call.injected])).toEqual([
        ['initialize', 1, false],
        ['notifications/initialized', 1, false],
        ['tools/list', 1, false],
        ['tools/call create_shipment', 1, false],
        ['tools/list', 2, false],
        ['tools/call get_quote', 1, false],
        ['tools/list', 3, false],
        ['tools/call create_shipment', 2, true],
      ])
      expect(mcp.at(-1)?.mcp).toEqual({ method: 'tools/call', tool: 'create_shipment', id: 6, session: null, arguments: { order_id: 'o-2' }, outcome: 'isError', errorCode: null })
      expect(mcp[3]?.mcp?.outcome).toBe('result')
      expect(report.coverage['second-create']).toEqual({ eligible: 1, selected: 1, triggered: 1 })
      expect(text(first)).toBe(JSON.stringify({ shipment_id: 'shp_1' }))
    })
  })
}

describe('MCP route names over SSE and sessions', () => {
  for (const json of [true, false]) {
    it(`records the session the server assigned and the outcome of ${json ? 'JSON' : 'event-stream'} answers`, async () => {
      const scenario = await mcpScenario('reverse', { rules: [{ name: 'rpc', route: 'tools/call get_quote', kind: 'rpc_error', code: -32001, message: 'Request timed out' }] }, { stateful: true, json })
      const { client, transport } = await scenario.connect()
      await client.callTool({ name: 'create_shipment', arguments: { order_id: 'o-1' } })
      await expect(client.callTool({ name: 'get_quote', arguments: { order_id: 'o-1' } })).rejects.toMatchObject({ code: -32001 })
      const calls = scenario.report().calls.filter((call) => call.mcp)
      const session = transport.sessionId
      expect(session).toMatch(/^[0-9a-f-]{36}$/)
      expect(calls.map((call) => [call.route, call.mcp?.session, call.mcp?.outcome, call.mcp?.errorCode])).toEqual([
        ['initialize', session, 'result', null],
        ['notifications/initialized', session, null, null],
        ['tools/call create_shipment', session, 'result', null],
        ['tools/call get_quote', session, 'error', -32001],
      ])
    })
  }
})

describe('MCP through HTTPS with tunnelUnmatched', () => {
  it('intercepts the MCP server\'s host when a rule names a tool, so the rule fires', async () => {
    const scenario = await mcpScenario('https', { rules: [{ name: 'quote-fails', route: 'tools/call get_quote', kind: 'tool_error' }] }, { stateful: false, json: true }, { tunnelUnmatched: true })
    const { client } = await scenario.connect()
    expect((await client.callTool({ name: 'get_quote', arguments: { order_id: 'o-1' } })).isError).toBe(true)
    expect(scenario.report().coverage['quote-fails']).toEqual({ eligible: 1, selected: 1, triggered: 1 })
  })
})

describe('MCP evidence redaction', () => {
  it('stores tool arguments redacted as bodies are', async () => {
    const scenario = await mcpScenario('reverse', { redact: { keys: ['card_number'], secrets: [] } })
    const { client } = await scenario.connect()
    const args = { order_id: 'o-1', api_key: 'sk-proj-abcdefghijklmnopqrstuvwxyz0123456789', card_number: '4111111111111111', note: 'use Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJlc2lnbmF0dXJl' }
    await client.callTool({ name: 'get_quote', arguments: args })
    const call = scenario.report().calls.find((c) => c.route === 'tools/call get_quote')
    expect(call?.mcp?.arguments).toEqual({ order_id: 'o-1', api_key: '[REDACTED]', card_number: '[REDACTED]', note: 'use Bearer [REDACTED]' })
    expect(JSON.stringify(scenario.report())).not.toContain('abcdefghijklmnop')
  })
})
