/**
 * MCP through replicas sharing a run in Redis: the route, the rule's ordinal, the call's `mcp`
 * record and the trace context the message carries come from the MCP plug-in's names, through the
 * shared store's `begin` as through the memory one.
 */
import { describe, expect, it } from 'vitest'
import type { Report } from '../../src/engine/schema/report.js'
import { startProxy, type ProxyServer } from '../../src/proxy/proxy-server.js'
import { hasRedis } from '../helpers/redis-server.js'
import { useReplicaSetting } from '../helpers/replicas.js'
import { closing } from '../helpers/teardown.js'

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736'
const setting = useReplicaSetting()

function toolCall(proxy: ProxyServer, id: number): Promise<Response> {
  const body = { jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'create_shipment', arguments: { order_id: `o-${id}` }, _meta: { traceparent: `00-${TRACE_ID}-00f067aa0ba902b7-01` } } }
  return fetch(`${proxy.url}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'x-toolstorm-run': 'mcp' }, body: JSON.stringify(body) })
}

describe.skipIf(!hasRedis)('MCP through replicas sharing Redis', () => {
  it('routes each tool call by its tool, fires the rule on its ordinal and records its mcp entry and trace', async () => {
    const config = { mcp: { endpoints: ['/mcp'] }, rules: [{ name: 'broken-second', route: 'tools/call create_shipment', kind: 'tool_error', calls: [2] }] }
    const replicas: ProxyServer[] = []
    for (let i = 0; i < 2; i++) replicas.push(closing(await startProxy({ targets: [setting.upstream!.url], config, state: { url: setting.redis!.url, prefix: 'mcp' } })))
    for (const id of [1, 2, 3]) await (await toolCall(replicas[(id - 1) % 2]!, id)).arrayBuffer()

    let report: Report | undefined
    for (let attempt = 0; attempt < 100; attempt++) {
      report = (await (await fetch(`${replicas[0]!.adminUrl}/report?run=mcp`, { headers: { authorization: `Bearer ${replicas[0]!.token}` } })).json()) as Report
      if (report.calls.filter((call) => call.outcome !== 'running').length >= 3) break
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    const calls = [...report!.calls].sort((a, b) => a.id - b.id)
    expect(calls.map((call) => [call.route, call.ordinal, call.injected])).toEqual([
      ['tools/call create_shipment', 1, false],
      ['tools/call create_shipment', 2, true],
      ['tools/call create_shipment', 3, false],
    ])
    expect(calls.map((call) => [call.mcp?.method, call.mcp?.tool, call.mcp?.id, call.trace?.traceId])).toEqual([1, 2, 3].map((id) => ['tools/call', 'create_shipment', id, TRACE_ID]))
  })
})
