import { McpError } from '@modelcontextprotocol/sdk/types.js'
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { describe, expect, it } from 'vitest'
import { contract } from '../../src/contracts/contract.js'
import { mcpScenario } from '../helpers/mcp-scenario.js'
import type { Transport } from '../helpers/transports.js'


const LOST_FIRST_CREATE = { seed: 42, rules: [{ name: 'lost-ack', route: 'tools/call create_shipment', kind: 'response_lost' as const, calls: [1] }] }

describe('MCP faults seen by the SDK client', () => {
  for (const transport of ['reverse', 'intercept', 'msw'] as const satisfies readonly Transport[]) {
    it(`answers rpc_error as a JSON-RPC error the client raises as McpError (${transport})`, async () => {
      const scenario = await mcpScenario(transport, { rules: [{ name: 'internal', route: 'tools/call get_quote', kind: 'rpc_error' }] })
      const { client } = await scenario.connect()
      const error = await client.callTool({ name: 'get_quote', arguments: { order_id: 'o-1' } }).catch((caught: unknown) => caught)
      expect(error).toBeInstanceOf(McpError)
      expect(error).toMatchObject({ code: -32603, message: 'MCP error -32603: Internal error' })
      expect(scenario.server.received).not.toContain('tools/call get_quote')
    })
  }

  for (const transport of ['reverse', 'intercept'] as const satisfies readonly Transport[]) {
    it(`answers protocol_error over HTTP as a 2026-07-28 server does: 400 with the JSON-RPC error and its data (${transport})`, async () => {
      const scenario = await mcpScenario(transport, { rules: [{ name: 'old', route: 'tools/call get_quote', kind: 'protocol_error', error: 'unsupported_version', calls: [1] }] })
      const { client } = await scenario.connect()
      const error = await client.callTool({ name: 'get_quote', arguments: { order_id: 'o-1' } }).catch((caught: unknown) => caught)
      // The 1.x client (2025-11-25, named in its MCP-Protocol-Version header) raises the HTTP status with the body;
      // by default the answer names the other era's revision as supported, never the one requested.
      expect(error).toBeInstanceOf(StreamableHTTPError)
      expect((error as StreamableHTTPError).code).toBe(400)
      const body = JSON.parse((error as Error).message.slice((error as Error).message.indexOf('{'))) as unknown
      expect(body).toEqual({ jsonrpc: '2.0', id: expect.anything(), error: { code: -32022, message: 'Unsupported protocol version: 2025-11-25', data: { supported: ['2026-07-28'], requested: '2025-11-25' } } })
      expect(scenario.server.received).not.toContain('tools/call get_quote')
      // The next call is the server's.
      expect((await client.callTool({ name: 'get_quote', arguments: { order_id: 'o-1' } })).isError).not.toBe(true)
    })
  }

  for (const transport of ['reverse', 'intercept'] as const satisfies readonly Transport[]) {
    it(`answers replace on a tool call as the tool's result, with the request's id (${transport})`, async () => {
      const scenario = await mcpScenario(transport, { rules: [{ name: 'fake-quote', route: 'tools/call get_quote', kind: 'replace', replacement: { price: 0 } }] })
      const { client } = await scenario.connect()
      const result = await client.callTool({ name: 'get_quote', arguments: { order_id: 'o-1' } })
      expect([result.isError, result.structuredContent, result.content]).toEqual([undefined, { price: 0 }, [{ type: 'text', text: '{"price":0}' }]])
      expect(scenario.server.received).not.toContain('tools/call get_quote')
    })
  }

  for (const transport of ['reverse', 'forward', 'intercept', 'msw'] as const satisfies readonly Transport[]) {
    it(`answers session_expired with 404 on a stateful session; a new session works (${transport})`, async () => {
      const scenario = await mcpScenario(transport, { rules: [{ name: 'expired', route: 'tools/call create_shipment', kind: 'session_expired', calls: [1] }] }, { stateful: true, json: false })
      const { client, transport: first } = await scenario.connect()
      const error = await client.callTool({ name: 'create_shipment', arguments: { order_id: 'o-1' } }).catch((caught: unknown) => caught)
      expect(error).toBeInstanceOf(StreamableHTTPError)
      expect((error as StreamableHTTPError).code).toBe(404)
      // What an agent does on 404: initialize a new session and call again.
      const again = await scenario.connect()
      expect(again.transport.sessionId).not.toBe(first.sessionId)
      expect((await again.client.callTool({ name: 'create_shipment', arguments: { order_id: 'o-1' } })).isError).toBeFalsy()
      expect(scenario.server.commits).toEqual(['o-1'])
      const calls = scenario.report().calls.filter((call) => call.route === 'tools/call create_shipment')
      expect(calls.map((call) => [call.ordinal, call.injected, call.executed, call.mcp?.outcome, call.mcp?.errorCode])).toEqual([
        [1, true, false, 'error', -32001],
        [2, false, true, 'result', null],
      ])
      expect(calls[0]?.status).toBe(404)
    })
  }

  it('forwards session_expired untouched on a stateless server (no session to lose)', async () => {
    const scenario = await mcpScenario('reverse', { rules: [{ name: 'expired', route: 'tools/call *', kind: 'session_expired' }] })
    const { client } = await scenario.connect()
    expect((await client.callTool({ name: 'get_quote', arguments: { order_id: 'o-1' } })).isError).toBeFalsy()
    expect(scenario.report().coverage.expired).toEqual({ eligible: 1, selected: 1, triggered: 0 })
  })

  for (const json of [true, false]) {
    for (const transport of ['reverse', 'forward', 'https', 'intercept', 'msw'] as const satisfies readonly Transport[]) {
      it(`loses the ${json ? 'JSON' : 'event-stream'} answer of one tool call after the tool committed (${transport})`, async () => {
        const scenario = await mcpScenario(transport, LOST_FIRST_CREATE, { stateful: true, json })
        const { client } = await scenario.connect()
        await client.listTools()
        await expect(client.callTool({ name: 'create_shipment', arguments: { order_id: 'o-1' } })).rejects.toThrow()
        expect(scenario.server.commits).toEqual(['o-1'])
        const lost = scenario.report().calls.find((call) => call.route === 'tools/call create_shipment')
        expect(lost).toMatchObject({ outcome: 'reset', executed: true, injected: true, upstreamStatus: 200, mcp: { method: 'tools/call', tool: 'create_shipment', outcome: null } })
      })
    }
  }

  it('cuts an event-stream answer before its result: the tool committed, the SDK client waits for its own timeout', async () => {
    const scenario = await mcpScenario('reverse', { rules: [{ name: 'cut', route: 'tools/call create_shipment', kind: 'stream_cut', after: 0 }] }, { stateful: false, json: false })
    const { client } = await scenario.connect()
    const error = await client.callTool({ name: 'create_shipment', arguments: { order_id: 'o-1' } }, undefined, { timeout: 300 }).catch((caught: unknown) => caught)
    expect(error).toBeInstanceOf(McpError)
    expect((error as McpError).code).toBe(-32001)
    expect(scenario.server.commits).toEqual(['o-1'])
    const cut = scenario.report().calls.find((call) => call.route === 'tools/call create_shipment')
    expect(cut).toMatchObject({ injected: true, executed: true, cut: { events: 0 }, mcp: { outcome: null } })
  })

  it('drifts only the structuredContent of a tool answer, so the SDK client refuses it against the tool\'s outputSchema', async () => {
    const scenario = await mcpScenario('reverse', { seed: 3, rules: [{ name: 'drift', route: 'tools/call track_shipment', kind: 'schema_drift', fields: ['eta_days'] }] })
    const { client } = await scenario.connect()
    await client.listTools()
    const error = await client.callTool({ name: 'track_shipment', arguments: { shipment_id: 'shp_1' } }).catch((caught: unknown) => caught)
    expect(error).toBeInstanceOf(McpError)
    expect((error as McpError).message).toContain('Structured content does not match the tool\'s output schema')
    const call = scenario.report().calls.find((c) => c.route === 'tools/call track_shipment')
    // The JSON-RPC envelope is intact: the client matched the answer to its request, and the report read its outcome.
    expect(call).toMatchObject({ injected: true, mcp: { id: 2, outcome: 'result' } })
  })

  it('drifts the structuredContent of an event-stream answer too, so the SDK client refuses it', async () => {
    const scenario = await mcpScenario('reverse', { seed: 3, rules: [{ name: 'drift', route: 'tools/call track_shipment', kind: 'schema_drift' }] }, { stateful: true, json: false })
    const { client } = await scenario.connect()
    await client.listTools()
    const error = await client.callTool({ name: 'track_shipment', arguments: { shipment_id: 'shp_1' } }).catch((caught: unknown) => caught)
    expect(error).toBeInstanceOf(McpError)
    expect((error as McpError).message).toContain('Structured content does not match the tool\'s output schema')
    expect(scenario.report().calls.find((c) => c.route === 'tools/call track_shipment')).toMatchObject({ injected: true, mcp: { id: 2, outcome: 'result' } })
  })

  for (const [transport, json] of [['reverse', true], ['reverse', false], ['intercept', true], ['msw', false]] as const) {
    it(`drifts into values the outputSchema from tools/list forbids, so every drifted call is refused (${transport}, ${json ? 'JSON' : 'event stream'})`, async () => {
      // `carrier` is declared string-or-null and answered null: a type change without the schema
      // may give the string "null", which the schema allows and the client accepts.
      const scenario = await mcpScenario(transport, { seed: 5, rules: [{ name: 'drift', route: 'tools/call shipment_carrier', kind: 'schema_drift' }] }, { stateful: false, json })
      const { client } = await scenario.connect()
      await client.listTools()
      const outcomes: string[] = []
      for (let i = 0; i < 8; i++) {
        const result = await client.callTool({ name: 'shipment_carrier', arguments: { shipment_id: `shp_${i}` } }).then(
          (answer) => `accepted ${JSON.stringify(answer.structuredContent)}`,
          (caught: McpError) => (caught.message.includes('does not match the tool\'s output schema') ? 'refused' : caught.message),
        )
        outcomes.push(result)
      }
      expect(outcomes).toEqual(Array(8).fill('refused'))
      expect(scenario.report().calls.filter((c) => c.route === 'tools/call shipment_carrier').map((c) => c.injected)).toEqual(Array(8).fill(true))
    })
  }

  it('answers 429, 503 and a gateway timeout before the tool server sees the call', async () => {
    const scenario = await mcpScenario('reverse', {
      rules: [
        { name: 'busy', route: 'tools/call get_quote', kind: 'rate_limit', calls: [1], delay: 2 },
        { name: 'down', route: 'tools/call get_quote', kind: 'unavailable', calls: [2] },
        { name: 'slow', route: 'tools/call get_quote', kind: 'timeout', calls: [3] },
      ],
    })
    const { client } = await scenario.connect()
    const codes: unknown[] = []
    for (let i = 0; i < 3; i++) codes.push(await client.callTool({ name: 'get_quote', arguments: { order_id: 'o-1' } }).catch((error: StreamableHTTPError) => error.code))
    expect(codes).toEqual([429, 503, 504])
    expect(scenario.server.received).not.toContain('tools/call get_quote')
    expect(scenario.report().calls.filter((call) => call.mcp?.tool === 'get_quote').map((call) => [call.retryAfter, call.executed, call.mcp?.outcome])).toEqual([
      [2, false, null],
      [null, false, null],
      [null, false, null],
    ])
  })
})

describe('MCP commit evidence', () => {
  for (const transport of ['reverse', 'intercept', 'msw'] as const satisfies readonly Transport[]) {
    it(`a retried create_shipment whose answer was lost commits twice and fails no-duplicate-effects (${transport})`, async () => {
      const scenario = await mcpScenario(transport, LOST_FIRST_CREATE)
      const { client } = await scenario.connect()
      // The agent retries a call that failed: the tool server ran it the first time.
      const call = () => client.callTool({ name: 'create_shipment', arguments: { order_id: 'o-1' } })
      await call().catch(() => call())
      expect(scenario.server.commits).toEqual(['o-1', 'o-1'])
      const report = scenario.report()
      expect(report.effects.map((effect) => [effect.name, effect.key, effect.call])).toEqual([
        ['shipment', 'o-1', report.calls.find((c) => c.route === 'tools/call create_shipment' && c.ordinal === 1)?.id],
        ['shipment', 'o-1', report.calls.find((c) => c.route === 'tools/call create_shipment' && c.ordinal === 2)?.id],
      ])
      const verdict = contract(report).requireTriggered().noDuplicateEffects().atMostCalls(1, { route: 'tools/call create_shipment' }).toJSON()
      expect(verdict.checks.map((check) => [check.name, check.passed, check.detail])).toEqual([
        ['Fault exercised: lost-ack', true, 'Triggered 1 time(s)'],
        ['No duplicate side effects', false, '1 duplicate effect(s) across 2 commits'],
        ['Call budget: tools/call create_shipment', false, '2 / 1 calls'],
      ])
    })

    it(`the same retry with an idempotency key commits once and passes no-duplicate-effects (${transport})`, async () => {
      const scenario = await mcpScenario(transport, LOST_FIRST_CREATE)
      const { client } = await scenario.connect()
      const call = () => client.callTool({ name: 'create_shipment', arguments: { order_id: 'o-1', idempotency_key: 'idem-o-1' } })
      const result = await call().catch(() => call())
      expect(result.content).toEqual([{ type: 'text', text: JSON.stringify({ shipment_id: 'shp_1', replayed: true }) }])
      expect(scenario.server.commits).toEqual(['o-1'])
      expect(contract(scenario.report()).requireTriggered().noDuplicateEffects().passed).toBe(true)
    })
  }
})
