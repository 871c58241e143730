/**
 * A real MCP server for tests, built with the official TypeScript SDK (`McpServer` over the
 * Streamable HTTP transport) on 127.0.0.1: stateless or stateful, answering JSON or SSE. Its
 * `create_shipment` tool commits a shipment per call (or, given an `idempotency_key` it has
 * seen, returns the first one) and reports each commit with the effects helper, from the
 * request headers the SDK hands the handler.
 */
import http from 'node:http'
import https from 'node:https'
import { randomUUID } from 'node:crypto'
import type { AddressInfo } from 'node:net'
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js'
import { fetch as undiciFetch, type Dispatcher } from 'undici'
import { z } from 'zod'

export interface McpServerOptions {
  /** Sessions (`Mcp-Session-Id`) or none. */
  stateful: boolean
  /** Answer `application/json` instead of an event stream. */
  json: boolean
  /**
   * Serve the legacy HTTP+SSE transport (2024-11-05) instead: `GET /sse` opens a session's
   * stream, whose `endpoint` event names `/messages?sessionId=…` for the POSTs.
   */
  legacy?: boolean
  /** Serve HTTPS with this key and certificate (PEM). */
  tls?: { key: string; cert: string }
  /** Called at `create_shipment`'s commit point with the headers of the HTTP request that carried the call. */
  onCommit?: (headers: Record<string, string | string[] | undefined>, name: string, key: string) => Promise<unknown> | unknown
}

export interface TestMcpServer {
  /** The MCP endpoint (`http://127.0.0.1:<port>/mcp`; legacy: `…/sse`). */
  readonly url: string
  readonly origin: string
  readonly port: number
  /** Shipments committed, by order id, in order. */
  readonly commits: string[]
  /** JSON-RPC methods the server received, in order (`tools/call create_shipment` for tool calls). */
  readonly received: string[]
  close(): Promise<void>
}

function buildServer(commits: string[], byKey: Map<string, string>, options: McpServerOptions): McpServer {
  const server = new McpServer({ name: 'shipping', version: '1.0.0' })
  server.registerTool(
    'create_shipment',
    { description: 'Create a shipment for an order', inputSchema: { order_id: z.string(), idempotency_key: z.string().optional() } },
    async ({ order_id, idempotency_key }, extra) => {
      const known = idempotency_key === undefined ? undefined : byKey.get(idempotency_key)
      if (known !== undefined) return { content: [{ type: 'text', text: JSON.stringify({ shipment_id: known, replayed: true }) }] }
      const id = `shp_${commits.length + 1}`
      commits.push(order_id)
      if (idempotency_key !== undefined) byKey.set(idempotency_key, id)
      // The commit point: report it with the call id the proxy put on the request.
      await options.onCommit?.(extra.requestInfo?.headers ?? {}, 'shipment', order_id)
      return { content: [{ type: 'text', text: JSON.stringify({ shipment_id: id }) }] }
    },
  )
  server.registerTool(
    'track_shipment',
    { description: 'Where a shipment is', inputSchema: { shipment_id: z.string() }, outputSchema: { status: z.string(), eta_days: z.number() } },
    async ({ shipment_id }) => {
      const tracking = { status: `in transit (${shipment_id})`, eta_days: 2 }
      return { content: [{ type: 'text', text: JSON.stringify(tracking) }], structuredContent: tracking }
    },
  )
  server.registerTool(
    'shipment_carrier',
    { description: 'Which carrier took a shipment, if any yet', inputSchema: { shipment_id: z.string() }, outputSchema: { carrier: z.string().nullable() } },
    async () => ({ content: [{ type: 'text', text: '{"carrier":null}' }], structuredContent: { carrier: null } }),
  )
  server.registerTool('get_quote', { description: 'Quote a price', inputSchema: { order_id: z.string() } }, async ({ order_id }) => ({
    content: [{ type: 'text', text: JSON.stringify({ order_id, price: 12.5 }) }],
  }))
  return server
}

export async function startMcpServer(options: McpServerOptions): Promise<TestMcpServer> {
  const commits: string[] = []
  const received: string[] = []
  const byKey = new Map<string, string>()
  const sessions = new Map<string, StreamableHTTPServerTransport>()
  const legacySessions = new Map<string, SSEServerTransport>()
  const readJson = (req: http.IncomingMessage) =>
    new Promise<unknown>((resolve, reject) => {
      const chunks: Buffer[] = []
      req.on('data', (chunk: Buffer) => chunks.push(chunk))
      req.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8')
        try {
          resolve(text ? JSON.parse(text) : undefined)
        } catch (error) {
          reject(error)
        }
      })
      req.on('error', reject)
    })

  const listener = async (req: http.IncomingMessage, res: http.ServerResponse) => {
    const body = req.method === 'POST' ? await readJson(req) : undefined
    if (body && typeof body === 'object' && 'method' in body) {
      const message = body as { method: string; params?: { name?: string } }
      received.push(message.method === 'tools/call' ? `tools/call ${message.params?.name}` : message.method)
    }
    if (options.legacy) {
      if (req.method === 'GET' && req.url === '/sse') {
        const transport = new SSEServerTransport('/messages', res)
        legacySessions.set(transport.sessionId, transport)
        transport.onclose = () => void legacySessions.delete(transport.sessionId)
        await buildServer(commits, byKey, options).connect(transport)
        return
      }
      const transport = legacySessions.get(new URL(req.url ?? '/', 'http://localhost').searchParams.get('sessionId') ?? '')
      if (req.method !== 'POST' || !transport) {
        res.writeHead(404, { 'content-type': 'text/plain' }).end('Session not found')
        return
      }
      await transport.handlePostMessage(req, res, body)
      return
    }
    if (!options.stateful) {
      const server = buildServer(commits, byKey, options)
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: options.json })
      res.on('close', () => {
        void transport.close()
        void server.close()
      })
      await server.connect(transport)
      await transport.handleRequest(req, res, body)
      return
    }
    const sessionId = req.headers['mcp-session-id']
    let transport = typeof sessionId === 'string' ? sessions.get(sessionId) : undefined
    if (!transport) {
      if (typeof sessionId === 'string' || req.method !== 'POST') {
        res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32001, message: 'Session not found' }, id: null }))
        return
      }
      const created = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        enableJsonResponse: options.json,
        onsessioninitialized: (id) => void sessions.set(id, created),
      })
      created.onclose = () => {
        if (created.sessionId) sessions.delete(created.sessionId)
      }
      await buildServer(commits, byKey, options).connect(created)
      transport = created
    }
    await transport.handleRequest(req, res, body)
  }
  const handle = (req: http.IncomingMessage, res: http.ServerResponse) => {
    listener(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500).end()
      else res.destroy()
    })
  }
  const server = options.tls ? https.createServer(options.tls, handle) : http.createServer(handle)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const origin = `${options.tls ? 'https' : 'http'}://127.0.0.1:${(server.address() as AddressInfo).port}`
  return {
    url: `${origin}${options.legacy ? '/sse' : '/mcp'}`,
    origin,
    port: (server.address() as AddressInfo).port,
    commits,
    received,
    close: async () => {
      for (const transport of sessions.values()) await transport.close().catch(() => undefined)
      for (const transport of legacySessions.values()) await transport.close().catch(() => undefined)
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}

/** A connected SDK client; `dispatcher` sends its requests through a forward proxy. */
export async function connectMcpClient(url: string, dispatcher?: Dispatcher): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const transport = new StreamableHTTPClientTransport(new URL(url), dispatcher ? { fetch: viaDispatcher(dispatcher) } : {})
  const client = new Client({ name: 'agent', version: '1.0.0' })
  await client.connect(transport)
  return { client, transport }
}

function viaDispatcher(dispatcher: Dispatcher): typeof fetch {
  return ((input: string | URL, init?: RequestInit) => undiciFetch(input, { ...(init as object), dispatcher })) as unknown as typeof fetch
}

/**
 * A connected SDK client on the legacy HTTP+SSE transport (`url` is the `/sse` stream).
 * `postFetch` sends its POSTs another way than its GET stream (a test of a stream the proxy never saw).
 */
export async function connectLegacyMcpClient(url: string, dispatcher?: Dispatcher, postFetch?: typeof fetch): Promise<{ client: Client; transport: SSEClientTransport }> {
  const fetchImpl = dispatcher ? viaDispatcher(dispatcher) : undefined
  const transport = new SSEClientTransport(new URL(url), {
    ...(postFetch ?? fetchImpl ? { fetch: postFetch ?? fetchImpl } : {}),
    ...(fetchImpl ? { eventSourceInit: { fetch: fetchImpl } } : postFetch ? { eventSourceInit: { fetch } } : {}),
  })
  const client = new Client({ name: 'agent', version: '1.0.0' })
  await client.connect(transport)
  return { client, transport }
}
