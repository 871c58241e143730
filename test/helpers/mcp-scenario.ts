/**
 * An MCP scenario: a real MCP server (official SDK), a storm in front of it on a chosen
 * transport, and an SDK client connected through it. The tool server reports commits as a
 * user's would: through the proxy's sidecar with the effects helper (proxy modes), or with
 * `storm.effect()` and the request's call id (in-process).
 */
import { setupServer } from 'msw/node'
import { ProxyAgent } from 'undici'
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import type { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js'
import { ToolstormEffects } from '../../src/effects/toolstorm-effects.js'
import type { StormConfigInput } from '../../src/engine/schema/config.js'
import type { Report } from '../../src/engine/schema/report.js'
import { createStorm } from '../../src/create-storm.js'
import type { Storm } from '../../src/engine/storm.js'
import { intercept } from '../../src/interceptors/intercept.js'
import { stormHandlers } from '../../src/interceptors/msw-handlers.js'
import { startProxy, type ProxyOptions } from '../../src/proxy/proxy-server.js'
import { createTestCa } from './test-ca.js'
import { connectLegacyMcpClient, connectMcpClient, startMcpServer, type McpServerOptions, type TestMcpServer } from './mcp-server.js'

/** `https`: forward mode with HTTPS intercepted (CONNECT, the proxy's CA) to an HTTPS MCP server. */
export type McpMode = 'reverse' | 'forward' | 'https' | 'in-process' | 'msw'
export const MCP_MODES: readonly McpMode[] = ['reverse', 'forward', 'https', 'in-process', 'msw']

export interface McpScenario {
  readonly mode: McpMode
  readonly server: TestMcpServer
  readonly storm: Storm
  /** A new SDK client, connected (initialize + initialized) through the storm. */
  connect(): Promise<{ client: Client; transport: StreamableHTTPClientTransport }>
  /** A new SDK client on the legacy HTTP+SSE transport (the server must be `legacy`), connected through the storm. */
  connectLegacy(): Promise<{ client: Client; transport: SSEClientTransport }>
  report(): Report
  close(): Promise<void>
}

export async function startMcpScenario(
  mode: McpMode,
  config: StormConfigInput,
  server: Omit<McpServerOptions, 'onCommit' | 'tls'> = { stateful: false, json: true },
  proxyOptions: Partial<ProxyOptions> = {},
): Promise<McpScenario> {
  const storm = createStorm(config)
  let effects: ToolstormEffects | null = null
  const upstreamCa = mode === 'https' ? await createTestCa() : null
  const mcp = await startMcpServer({
    ...server,
    ...(upstreamCa ? { tls: await upstreamCa.issue(['127.0.0.1']) } : {}),
    onCommit: (headers, name, key) => (effects ? effects.report({ headers }, name, key) : storm.effect(name, key, { call: headers })),
  })
  const clients: Client[] = []
  const closers: Array<() => Promise<void> | void> = []
  let endpoint = mcp.url
  let dispatcher: ProxyAgent | undefined
  if (mode === 'reverse' || mode === 'forward' || mode === 'https') {
    const proxy = await startProxy({
      ...(mode === 'reverse' ? { targets: [mcp.origin] } : {}),
      ...(upstreamCa ? { connectPorts: [mcp.port], upstreamCa: [upstreamCa.certPem] } : {}),
      ...proxyOptions,
      storm,
    })
    effects = new ToolstormEffects({ sidecarUrl: proxy.adminUrl })
    closers.push(() => proxy.close())
    if (mode === 'reverse') endpoint = `${proxy.url}${new URL(mcp.url).pathname}`
    else {
      dispatcher = new ProxyAgent(mode === 'https' ? { uri: proxy.url, requestTls: { ca: proxy.ca!.certificatePem } } : { uri: proxy.url, proxyTunnel: false })
      closers.push(() => dispatcher?.close())
    }
  } else if (mode === 'in-process') {
    const interception = intercept(storm, { filter: (url) => url.origin === mcp.origin })
    closers.push(() => interception.dispose())
  } else {
    const msw = setupServer(...stormHandlers(storm, { filter: (url) => url.origin === mcp.origin }))
    msw.listen({ onUnhandledRequest: 'bypass' })
    closers.push(() => msw.close())
  }
  return {
    mode,
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
    async close() {
      for (const client of clients) await client.close().catch(() => undefined)
      for (const close of closers.reverse()) await close()
      await mcp.close()
    },
  }
}
