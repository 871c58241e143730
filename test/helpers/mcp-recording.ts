/**
 * An MCP session recorded through a proxy with a cassette recorder, as `toolstorm record` does:
 * connect, list the tools twice, create a shipment; then the cassette, and what the client saw.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { expect } from 'vitest'
import type { Cassette } from '../../src/cassette/format/cassette.js'
import { createCassetteRecorder } from '../../src/cassette/record/cassette-recorder.js'
import { createStorm } from '../../src/engine/storm.js'
import { startProxy } from '../../src/proxy/proxy-server.js'
import { startMcpServer, type McpServerOptions } from './mcp-server.js'

export interface RecordedMcpSession {
  readonly cassette: Cassette
  readonly tools: string[]
  readonly created: unknown
}

/** `connect` gets the proxy's URL of the server's endpoint (`/mcp`, or `/sse` for a legacy server). */
export async function recordMcpSession(server: Omit<McpServerOptions, 'onCommit' | 'tls'>, connect: (url: string) => Promise<{ client: Client }>): Promise<RecordedMcpSession> {
  const mcp = await startMcpServer(server)
  const storm = createStorm({})
  const recorder = createCassetteRecorder(storm, { urlForm: 'origin' })
  const proxy = await startProxy({ targets: [mcp.origin], storm, observer: recorder.observer })
  try {
    const { client } = await connect(proxy.url + new URL(mcp.url).pathname)
    await client.listTools()
    const tools = (await client.listTools()).tools.map((tool) => tool.name)
    const created = await client.callTool({ name: 'create_shipment', arguments: { order_id: 'o-1' } })
    await client.close()
    expect(mcp.commits).toEqual(['o-1'])
    return { cassette: await proxy.close().then(() => recorder.close()).then(() => recorder.cassette()), tools, created }
  } finally {
    await proxy.close()
    await mcp.close()
  }
}
