/**
 * One MCP message, as the MCP plug-in reads it from a request body (src/mcp/parse-mcp-request.ts):
 * a JSON-RPC 2.0 request or notification. Its route name is `<method> <target>` (`tools/call create_shipment`, `resources/read file:///x`,
 * `prompts/get summarize`), else the method alone (`initialize`, `tools/list`), so a tool's
 * ordinals and draws are its own, whatever else the client sends.
 *
 * @example
 * mcpRouteName({ method: 'tools/call', target: 'create_shipment' }) // 'tools/call create_shipment'
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
  /**
   * The revision the request claims in its `_meta` envelope (`io.modelcontextprotocol/protocolVersion`):
   * a 2026-07-28 client sends it on every request, and expects results shaped for it.
   */
  readonly protocolVersion?: string
  /**
   * Its params carry `inputResponses` or `requestState`: the client calls again with the input an
   * `input_required` answer asked for (2026-07-28), a further round of that call.
   */
  readonly answersInput?: boolean
}

/** The `_meta` key of the revision a request claims (protocol revision 2026-07-28). */
export const PROTOCOL_VERSION_META_KEY = 'io.modelcontextprotocol/protocolVersion'

/** Whether `version` is of the 2026-07-28 revision or later, whose results carry a `resultType`. */
export function isModernRevision(version: string | undefined): boolean {
  return version !== undefined && version >= '2026-07-28'
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

/** The param that holds a method's target (`name`, `uri`), or undefined when its target names no route. */
export function targetParamOf(method: string): 'name' | 'uri' | undefined {
  return TARGET_PARAM[method]
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

declare module '../engine/http.js' {
  interface RequestDetails {
    /** The MCP message the request carries (set by the MCP plug-in); null or absent for other requests. */
    readonly mcp?: McpRequest | null
  }
}
