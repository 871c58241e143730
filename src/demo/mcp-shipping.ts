/**
 * The lab with its tools behind an MCP server (`toolstorm demo --via mcp`): the shipping logic as
 * the tools `check_inventory` and `create_shipment` (and the control plane's `request_approval`
 * and `report_event`) of a Streamable HTTP server built with the
 * official TypeScript SDK, and the agent's tools as calls of the SDK's client. The SDK is an
 * optional peer dependency: it is loaded here only, on first use.
 */
import http from 'node:http'
import { z } from 'zod'
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { MissingPeerError } from '../errors.js'
import { ToolCallError, toolCallErrorFor, type ShippingTools } from './agent.js'
import { createShippingLogic, type ServiceHooks, type ServiceResponse } from './shipping-logic.js'
import { firstHeaderValues, listenShippingService, type ShippingService } from './shipping-service.js'

/** Where the server answers MCP requests. */
export const MCP_PATH = '/mcp'

async function loadSdk() {
  try {
    const [server, serverTransport, client, clientTransport] = await Promise.all([
      import('@modelcontextprotocol/sdk/server/mcp.js'),
      import('@modelcontextprotocol/sdk/server/streamableHttp.js'),
      import('@modelcontextprotocol/sdk/client/index.js'),
      import('@modelcontextprotocol/sdk/client/streamableHttp.js'),
    ])
    return { McpServer: server.McpServer, StreamableHTTPServerTransport: serverTransport.StreamableHTTPServerTransport, Client: client.Client, StreamableHTTPClientTransport: clientTransport.StreamableHTTPClientTransport }
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    if (code !== 'ERR_MODULE_NOT_FOUND' && code !== 'MODULE_NOT_FOUND') throw error
    throw new MissingPeerError('Failed to run the demo over MCP: @modelcontextprotocol/sdk is not installed. It is an optional peer dependency of toolstorm; install it with `npm i -D @modelcontextprotocol/sdk` (1.x).', { cause: error })
  }
}

/** A tool's answer: the service's JSON as structured content, an error status as `isError`. */
function toolResult({ status, body }: ServiceResponse) {
  const text = JSON.stringify(status >= 400 ? { status, ...(body as object) } : body)
  if (status >= 400) return { content: [{ type: 'text' as const, text }], isError: true }
  return { content: [{ type: 'text' as const, text }], structuredContent: body as Record<string, unknown> }
}

/** The shipping service as an MCP server on 127.0.0.1 (stateless, JSON answers). */
export async function startMcpShippingService(hooks: ServiceHooks): Promise<ShippingService> {
  const sdk = await loadSdk()
  const logic = createShippingLogic(hooks)
  const buildServer = () => {
    const server = new sdk.McpServer({ name: 'shipping', version: '1.0.0' })
    server.registerTool('check_inventory', { description: 'Read stock for a SKU', inputSchema: { sku: z.string() } }, async ({ sku }, extra) =>
      toolResult(await logic.handle({ method: 'GET', path: `/inventory/${encodeURIComponent(sku)}`, headers: firstHeaderValues(extra.requestInfo?.headers), body: '' })),
    )
    server.registerTool(
      'create_shipment',
      { description: 'Ship an order from a warehouse', inputSchema: { order_id: z.string(), warehouse: z.unknown(), idempotency_key: z.string().optional() } },
      async ({ order_id, warehouse, idempotency_key }, extra) => {
        // The request's headers carry x-toolstorm-call, which the commit's effect report names.
        const headers = { ...firstHeaderValues(extra.requestInfo?.headers), ...(idempotency_key === undefined ? {} : { 'idempotency-key': idempotency_key }) }
        return toolResult(await logic.handle({ method: 'POST', path: '/shipments', headers, body: JSON.stringify({ order_id, warehouse }) }))
      },
    )
    server.registerTool('request_approval', { description: 'Ask the approval service for leave to ship an order', inputSchema: { order_id: z.string() } }, async ({ order_id }, extra) =>
      toolResult(await logic.handle({ method: 'POST', path: '/approvals', headers: firstHeaderValues(extra.requestInfo?.headers), body: JSON.stringify({ order_id }) })),
    )
    server.registerTool('report_event', { description: 'Report an event to the observability endpoint', inputSchema: { event: z.string(), completed: z.boolean() } }, async (event, extra) =>
      toolResult(await logic.handle({ method: 'POST', path: '/events', headers: firstHeaderValues(extra.requestInfo?.headers), body: JSON.stringify(event) })),
    )
    return server
  }
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      void (async () => {
        if (req.method !== 'POST' || req.url?.split('?')[0] !== MCP_PATH) {
          res.writeHead(405, { allow: 'POST' }).end()
          return
        }
        const mcp = buildServer()
        const transport = new sdk.StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true })
        res.on('close', () => {
          void transport.close()
          void mcp.close()
        })
        await mcp.connect(transport)
        await transport.handleRequest(req, res, JSON.parse(Buffer.concat(chunks).toString('utf8') || 'null'))
      })().catch(() => {
        if (!res.headersSent) res.writeHead(500).end()
        else res.destroy()
      })
    })
  })
  return listenShippingService(server, logic)
}

export interface McpTools extends ShippingTools {
  close(): Promise<void>
}

/**
 * The agent's tools as an SDK client connected to `url` (initialize, then tool calls). HTTP
 * failures reach the agent as they do over plain HTTP (429 with its Retry-After, 503, 504): the
 * client's fetch maps them, because the SDK's own error keeps only the status.
 */
export async function connectMcpTools(url: string, headers: Record<string, string>): Promise<McpTools> {
  const sdk = await loadSdk()
  const mappedFetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    let response: Response
    try {
      response = await fetch(input, init)
    } catch (error) {
      throw new ToolCallError('ConnectionLost', `Connection lost: ${(error as Error).message}`)
    }
    const failure = toolCallErrorFor(response.status, response.headers)
    // 405: the optional GET stream a stateless server does not offer; the SDK expects it.
    if (failure && response.status !== 405) {
      await response.body?.cancel()
      throw failure
    }
    return response
  }
  const transport = new sdk.StreamableHTTPClientTransport(new URL(url), { fetch: mappedFetch, requestInit: { headers } })
  const client: Client = new sdk.Client({ name: 'lab-agent', version: '1.0.0' })
  await client.connect(transport)
  const call = async (name: string, args: Record<string, unknown>): Promise<Record<string, unknown>> => {
    let result: Awaited<ReturnType<Client['callTool']>>
    try {
      result = await client.callTool({ name, arguments: args })
    } catch (error) {
      if (error instanceof ToolCallError) throw error
      throw new ToolCallError('ConnectionLost', `Connection lost: ${(error as Error).message}`)
    }
    const text = (result.content as Array<{ type: string; text?: string }> | undefined)?.find((item) => item.type === 'text')?.text ?? '{}'
    if (result.isError) {
      const status = (JSON.parse(text) as { status?: number }).status ?? 500
      throw toolCallErrorFor(status, new Headers()) ?? new ToolCallError('HttpError', text)
    }
    return (result.structuredContent as Record<string, unknown> | undefined) ?? (JSON.parse(text) as Record<string, unknown>)
  }
  return {
    checkInventory: (sku) => call('check_inventory', { sku }),
    createShipment: (order, key) => call('create_shipment', { ...order, ...(key === undefined ? {} : { idempotency_key: key }) }),
    requestApproval: (orderId) => call('request_approval', { order_id: orderId }),
    reportEvent: (event) => call('report_event', { event: String(event.event), completed: event.completed === true }),
    close: () => client.close(),
  }
}
