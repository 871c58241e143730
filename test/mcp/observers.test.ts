import { describe, expect, it } from 'vitest'
import type { ExchangeObserver } from '../../src/engine/exchange-flow.js'
import { startProxy } from '../../src/proxy/proxy-server.js'
import { connectMcpClient, startMcpServer } from '../helpers/mcp-server.js'
import { closing } from '../helpers/teardown.js'

describe('MCP evidence beside a user observer', () => {
  it('gives a recorder every exchange, MCP or not, with its bytes, while the report gets the MCP outcome', async () => {
    const server = closing(await startMcpServer({ stateful: false, json: true }))
    const seen: Array<[string, number]> = []
    const bytes = new Map<string, number>()
    const recorder: ExchangeObserver = {
      onUpstreamBody(exchange, chunk) {
        if (chunk) bytes.set(exchange.id, (bytes.get(exchange.id) ?? 0) + chunk.length)
      },
      onFinished(exchange) {
        seen.push([exchange.record?.route ?? '', bytes.get(exchange.id) ?? 0])
      },
    }
    const proxy = closing(await startProxy({ targets: [server.origin], observer: recorder }))
    const { client } = await connectMcpClient(`${proxy.url}/mcp`)
    await client.callTool({ name: 'get_quote', arguments: { order_id: 'o-1' } })
    await client.close()
    await (await fetch(`${proxy.url}/health`)).text()
    const routes = seen.map(([route]) => route)
    expect(routes).toEqual(expect.arrayContaining(['initialize', 'notifications/initialized', 'tools/call get_quote', 'GET /health']))
    expect(seen.find(([route]) => route === 'tools/call get_quote')?.[1]).toBeGreaterThan(0)
    expect(proxy.storm.report().calls.find((call) => call.route === 'tools/call get_quote')?.mcp?.outcome).toBe('result')
  })
})
