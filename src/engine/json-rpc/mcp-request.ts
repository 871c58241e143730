/**
 * One MCP message read from a request body: a JSON-RPC 2.0 request or notification. Its route
 * name is `<method> <target>` (`tools/call create_shipment`, `resources/read file:///x`,
 * `prompts/get summarize`), else the method alone (`initialize`, `tools/list`), so a tool's
 * ordinals and draws are its own, whatever else the client sends.
 *
 * @example
 * const call = parseMcpRequest(Buffer.from('{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"create_shipment"}}'))
 * mcpRouteName(call!) // 'tools/call create_shipment'
 * @see docs/mcp.md
 */

/** A JSON-RPC request id: the answer must carry the same one. */
export type JsonRpcId = string | number

export interface McpRequest {
  /** The JSON-RPC method (`tools/call`, `initialize`…). */
  readonly method: string
  /** The request id; null for a notification (it gets no answer). */
  readonly id: JsonRpcId | null
  /** What the call acts on: the tool or prompt name (`params.name`), the resource URI (`params.uri`); else null. */
  readonly target: string | null
  /** `params.arguments` of a tool or prompt call, raw (reports store them redacted). */
  readonly arguments: unknown
  /** The `Mcp-Session-Id` the client sent, if any (on the legacy transport: the query's `sessionId`). */
  readonly session: string | null
  /** Sent on the legacy HTTP+SSE transport: its answer travels on the session's GET stream (`legacy-sse.ts`). */
  readonly legacySse?: boolean
  /** `params._meta.traceparent`: the trace context MCP carries in the message (docs/claims.md). */
  readonly traceparent?: string
}

/** Methods whose target names the route, and the param that holds it. */
const TARGET_PARAM: Readonly<Record<string, 'name' | 'uri'>> = {
  'tools/call': 'name',
  'prompts/get': 'name',
  'resources/read': 'uri',
  'resources/subscribe': 'uri',
  'resources/unsubscribe': 'uri',
}

/** Route names are capped like declared ones (200 characters); a longer target is cut. */
const MAX_ROUTE_NAME = 200
const METHOD = /^[\x21-\x7e]{1,100}$/

/**
 * The MCP message in `body`, or null when it is not one JSON-RPC 2.0 request or notification
 * (a batch, a response, invalid JSON, no `method`): such a request is routed as plain HTTP.
 */
export function parseMcpRequest(body: Uint8Array, session: string | null = null): McpRequest | null {
  let message: unknown
  try {
    message = JSON.parse(Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8'))
  } catch {
    return null
  }
  if (message === null || typeof message !== 'object' || Array.isArray(message)) return null
  const { jsonrpc, method, id, params } = message as Record<string, unknown>
  if (jsonrpc !== '2.0' || typeof method !== 'string' || !METHOD.test(method)) return null
  if (id !== undefined && typeof id !== 'string' && !(typeof id === 'number' && Number.isFinite(id))) return null
  const targetParam = TARGET_PARAM[method]
  const paramsObject = params !== null && typeof params === 'object' && !Array.isArray(params) ? (params as Record<string, unknown>) : null
  const rawTarget = targetParam && paramsObject ? paramsObject[targetParam] : undefined
  const target = typeof rawTarget === 'string' && rawTarget.length > 0 ? rawTarget : null
  const meta = paramsObject?._meta
  const traceparent = meta !== null && typeof meta === 'object' ? (meta as Record<string, unknown>).traceparent : undefined
  const request: McpRequest = { method, id: id === undefined ? null : (id as JsonRpcId), target, arguments: paramsObject?.arguments ?? null, session }
  return typeof traceparent === 'string' ? { ...request, traceparent } : request
}

function singleHeader(value: string | string[] | undefined): string | null {
  return typeof value === 'string' && value.length > 0 ? value : null
}

/**
 * The MCP message named by a request's `Mcp-Method` and `Mcp-Name` headers (revision 2026-07-28),
 * for a body that is not read (over the bound): its route name, with no id or arguments (so the
 * MCP fault kinds, which answer with the id, leave it alone). Null without a valid `Mcp-Method`.
 */
export function mcpRequestFromHeaders(headers: Readonly<Record<string, string | string[] | undefined>>): McpRequest | null {
  const method = singleHeader(headers['mcp-method'])
  if (method === null || !METHOD.test(method)) return null
  const target = TARGET_PARAM[method] ? singleHeader(headers['mcp-name']) : null
  return { method, id: null, target, arguments: null, session: singleHeader(headers['mcp-session-id']) }
}

/** Whether a method's target is a URI (`resources/read`…) rather than a name. */
export function targetIsUri(method: string): boolean {
  return TARGET_PARAM[method] === 'uri'
}

/**
 * The route name of an MCP message: `<method> <target>`, or the method alone. A URI target
 * leaves out its query and fragment, as HTTP route names leave out the query: they vary, and
 * may carry tokens.
 */
export function mcpRouteName(request: Pick<McpRequest, 'method' | 'target'>): string {
  if (request.target === null) return request.method
  const target = targetIsUri(request.method) ? request.target.replace(/[?#][\s\S]*$/, '') : request.target
  const name = `${request.method} ${target}`
  return name.length > MAX_ROUTE_NAME ? name.slice(0, MAX_ROUTE_NAME) : name
}
