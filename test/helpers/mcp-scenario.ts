/**
 * An MCP scenario: a real MCP server (official SDK), a storm in front of it on a chosen
 * transport, and an SDK client connected through it. The tool server reports commits as a
 * user's would: through the proxy's sidecar with the effects helper (proxy modes), or with
 * `storm.effect()` and the request's call id (in-process).
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import type { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js'
import { ToolstormEffects } from '../../src/effects/toolstorm-effects.js'
import type { StormConfigInput } from '../../src/engine/schema/config.js'
import type { Report } from '../../src/engine/schema/report.js'
import { createStorm, type Storm } from '../../src/engine/storm.js'
import type { ProxyOptions } from '../../src/proxy/proxy-server.js'
import { closing } from './teardown.js'
import { createTestCa } from './test-ca.js'
import { openTransport, type Transport } from './transports.js'
import { connectLegacyMcpClient, connectMcpClient, startMcpServer, type McpServerOptions, type TestMcpServer } from './mcp-server.js'

export interface McpScenario {
  readonly transport: Transport
  readonly server: TestMcpServer
  readonly storm: Storm
  /** A new SDK client, connected (initialize + initialized) through the storm. */
  connect(): Promise<{ client: Client; transport: StreamableHTTPClientTransport }>
  /** A new SDK client on the legacy HTTP+SSE transport (the server must be `legacy`), connected through the storm. */
  connectLegacy(): Promise<{ client: Client; transport: SSEClientTransport }>
  report(): Report
  close(): Promise<void>
}

/** An MCP scenario on `transport` (`https`: an HTTPS MCP server behind the intercepting forward proxy), closed by `close()`. */
export async function startMcpScenario(
  transport: Transport,
  config: StormConfigInput,
  server: Omit<McpServerOptions, 'onCommit' | 'tls'> = { stateful: false, json: true },
  proxyOptions: Partial<ProxyOptions> = {},
): Promise<McpScenario> {
  const storm = createStorm(config)
  let effects: ToolstormEffects | null = null
  const upstreamCa = transport === 'https' ? await createTestCa() : null
  const mcp = await startMcpServer({
    ...server,
    ...(upstreamCa ? { tls: await upstreamCa.issue(['127.0.0.1']) } : {}),
    onCommit: (headers, name, key) => (effects ? effects.report({ headers }, name, key) : storm.effect(name, key, { call: headers })),
  })
  const clients: Client[] = []
  const opened = await openTransport(transport, storm, mcp.origin, { proxy: proxyOptions, ...(upstreamCa ? { upstreamCa: upstreamCa.certPem } : {}) })
  if (opened.proxy) effects = new ToolstormEffects({ sidecarUrl: opened.proxy.adminUrl })
  const endpoint = `${opened.base}${new URL(mcp.url).pathname}`
  const dispatcher = opened.init.dispatcher
  let closed: Promise<void> | null = null
  return {
    transport,
    server: mcp,
    storm,
    async connect() {
      const connected = await connectMcpClient(endpoint, dispatcher)
      clients.push(connected.client)
      return connected
    },
    async connectLegacy() {
      const connected = await connectLegacyMcpClient(endpoint, dispatcher)
      clients.push(connected.client)
      return connected
    },
    report: () => storm.report(),
    close: () =>
      (closed ??= (async () => {
        for (const client of clients) await client.close().catch(() => undefined)
        await opened.close()
        await mcp.close()
      })()),
  }
}

/** `startMcpScenario()`, closed when the current test finishes. */
export async function mcpScenario(...args: Parameters<typeof startMcpScenario>): Promise<McpScenario> {
  return closing(await startMcpScenario(...args))
}
