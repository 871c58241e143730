/**
 * A protocol the kernel does not know, brought by a plug-in alone (as MCP is): the plug-in names
 * each request's route, adds what its own hooks read to the request's view (declaration merging
 * on `RequestDetails`) and gives the trace context its messages carry; the kernel routes, decides
 * and records by them with no change of its own. Here a gRPC-web-like service whose method
 * travels in a header. The storm made with it knows its route names: the rules lint of the proxy
 * serving it does not take them for typos.
 */
import { describe, expect, it } from 'vitest'
import type { ExchangePlugin } from '../../src/engine/plugin.js'
import { startProxy } from '../../src/proxy/proxy-server.js'
import { closing } from '../helpers/teardown.js'
import { startUpstream } from '../helpers/upstream.js'

declare module '../../src/engine/http.js' {
  interface RequestDetails {
    /** The RPC method this test's plug-in read off the request. */
    readonly rpcMethod?: string
  }
}

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736'

/** Names a request carrying `x-rpc-method` by that method; its refusals answer in the service's own shape. */
const rpcPlugin: ExchangePlugin = {
  name: 'rpc',
  nameRequest({ headers }) {
    const method = headers['x-rpc-method']
    if (typeof method !== 'string') return null
    return { reading: { route: `rpc ${method}`, details: { rpcMethod: method }, traceparent: `00-${TRACE_ID}-00f067aa0ba902b7-01` } }
  },
  shapeFailure(request, failure) {
    if (request.rpcMethod === undefined || failure !== 'rate_limit') return null
    return { status: 429, headers: { 'content-type': 'application/json' }, body: new TextEncoder().encode(JSON.stringify({ refused: request.rpcMethod })) }
  },
  checkRoute: (route) => (!route.startsWith('rpc ') ? undefined : /^rpc [\w.*]+\/[\w*]+$/.test(route) ? null : `"${route}" names no RPC method: write "rpc <service>/<method>".`),
}

describe('a protocol plug-in', () => {
  it('routes, shapes and traces its requests by what it names them, with no kernel change', async () => {
    const upstream = closing(await startUpstream())
    const rules = [{ name: 'busy-stock', route: 'rpc shipping.Stock/*', kind: 'rate_limit', calls: [1] }]
    const proxy = closing(await startProxy({ targets: [upstream.url], config: { rules }, plugins: [rpcPlugin] }))
    const ask = (method?: string) => fetch(`${proxy.url}/items/sku-1`, { headers: method ? { 'x-rpc-method': method } : {} })

    const refused = await ask('shipping.Stock/Get')
    expect([refused.status, await refused.json()]).toEqual([429, { refused: 'shipping.Stock/Get' }])
    const second = await ask('shipping.Stock/Get')
    await second.arrayBuffer()
    const plain = await ask()
    await plain.arrayBuffer()
    expect([second.status, plain.status]).toEqual([200, 200])

    const calls = proxy.storm.report().calls
    expect(calls.map((call) => [call.route, call.ordinal, call.injected])).toEqual([
      ['rpc shipping.Stock/Get', 1, true],
      ['rpc shipping.Stock/Get', 2, false],
      ['GET /items/sku-1', 1, false],
    ])
    expect(calls.map((call) => call.trace?.traceId ?? null)).toEqual([TRACE_ID, TRACE_ID, null])
  })

  it("has its route names known to the rules lint of the proxy serving it (PUT /rules), and its typos named by it", async () => {
    const upstream = closing(await startUpstream())
    const proxy = closing(await startProxy({ targets: [upstream.url], plugins: [rpcPlugin] }))
    const rules = [
      { name: 'busy-stock', route: 'rpc shipping.Stock/*', kind: 'rate_limit' },
      { name: 'typo', route: 'rpc shipping.Stock', kind: 'unavailable' },
    ]
    const response = await fetch(`${proxy.adminUrl}/rules`, { method: 'PUT', headers: { authorization: `Bearer ${proxy.token}`, 'content-type': 'application/json' }, body: JSON.stringify({ rules }) })
    expect(response.status).toBe(200)
    expect(((await response.json()) as { warnings: unknown[] }).warnings).toEqual([{ rule: 'typo', route: 'rpc shipping.Stock', message: '"rpc shipping.Stock" names no RPC method: write "rpc <service>/<method>".' }])
  })
})
