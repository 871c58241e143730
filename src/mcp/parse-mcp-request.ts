/**
 * The MCP message a request carries: read from its body (a JSON-RPC 2.0 request or notification),
 * or named by its headers when the body is not read. The MCP plug-in names requests with it.
 *
 * @example
 * const call = parseMcpRequest(Buffer.from('{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"create_shipment"}}'))
 * mcpRouteName(call!) // 'tools/call create_shipment'
 * @see docs/mcp.md
 */
import { PROTOCOL_VERSION_META_KEY, targetParamOf, type JsonRpcId, type McpRequest } from './mcp-request.js'

const METHOD = /^[\x21-\x7e]{1,100}$/

/**
 * Bodies a transport parsed already (stdio parses each line to tell requests from the rest): not
 * parsed twice. Each is taken once; a Map, not a WeakMap, whose entries cost the collector more.
 */
const parsedBodies = new Map<Uint8Array, unknown>()
/** Bodies noted and not yet named at most (a bound for bodies never named). */
const MAX_PARSED_BODIES = 1_000

/** `body` holds `message` (its JSON.parse): the next `parseMcpRequest(body)` takes it from here. */
export function noteParsedBody(body: Uint8Array, message: unknown): void {
  if (parsedBodies.size >= MAX_PARSED_BODIES) parsedBodies.clear()
  parsedBodies.set(body, message)
}

/**
 * The MCP message in `body`, or null when it is not one JSON-RPC 2.0 request or notification
 * (a batch, a response, invalid JSON, no `method`): such a request is routed as plain HTTP.
 */
export function parseMcpRequest(body: Uint8Array, session: string | null = null): McpRequest | null {
  let message = parsedBodies.get(body)
  if (message !== undefined) parsedBodies.delete(body)
  else {
    try {
      message = JSON.parse(Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8'))
    } catch {
      return null
    }
  }
  if (message === null || typeof message !== 'object' || Array.isArray(message)) return null
  const { jsonrpc, method, id, params } = message as Record<string, unknown>
  if (jsonrpc !== '2.0' || typeof method !== 'string' || !METHOD.test(method)) return null
  if (id !== undefined && typeof id !== 'string' && !(typeof id === 'number' && Number.isFinite(id))) return null
  const targetParam = targetParamOf(method)
  const paramsObject = params !== null && typeof params === 'object' && !Array.isArray(params) ? (params as Record<string, unknown>) : null
  const rawTarget = targetParam && paramsObject ? paramsObject[targetParam] : undefined
  const target = typeof rawTarget === 'string' && rawTarget.length > 0 ? rawTarget : null
  const meta = paramsObject?._meta
  const metaObject = meta !== null && typeof meta === 'object' ? (meta as Record<string, unknown>) : null
  const traceparent = metaObject?.traceparent
  const protocolVersion = metaObject?.[PROTOCOL_VERSION_META_KEY]
  const request: McpRequest = { method, id: id === undefined ? null : (id as JsonRpcId), target, arguments: paramsObject?.arguments ?? null, session }
  return {
    ...request,
    ...(typeof traceparent === 'string' ? { traceparent } : {}),
    ...(typeof protocolVersion === 'string' ? { protocolVersion: protocolVersion.slice(0, 50) } : {}),
    ...(paramsObject && (paramsObject.inputResponses !== undefined || paramsObject.requestState !== undefined) ? { answersInput: true } : {}),
  }
}

function singleHeader(value: string | string[] | undefined): string | null {
  return typeof value === 'string' && value.length > 0 ? value : null
}

const BASE64_SENTINEL = /^=\?base64\?([A-Za-z0-9+/]*={0,2})\?=$/

/** An `Mcp-Name` value as the server reads it: a `=?base64?…?=` sentinel decoded (a name that is not plain ASCII). */
function headerName(value: string | null): string | null {
  const sentinel = value === null ? null : BASE64_SENTINEL.exec(value)
  return sentinel ? Buffer.from(sentinel[1]!, 'base64').toString('utf8') : value
}

/**
 * What a 2026-07-28 request's `Mcp-Method` and `Mcp-Name` headers say when they disagree with the
 * message in its body (the server refuses it with `-32020` before running it), else null. Only a
 * request that sends `Mcp-Method` is checked (an earlier revision's client sends neither); the
 * request is routed by its body, what the server acts on.
 */
export function headerMismatchOf(request: McpRequest, headers: Readonly<Record<string, string | string[] | undefined>>): { method: string; name: string | null } | null {
  const method = singleHeader(headers['mcp-method'])
  if (method === null) return null
  const name = targetParamOf(request.method) ? headerName(singleHeader(headers['mcp-name'])) : null
  if (method === request.method && name === request.target) return null
  return { method: method.slice(0, 100), name: name === null ? null : name.slice(0, 200) }
}

/**
 * The MCP message named by a request's `Mcp-Method` and `Mcp-Name` headers (revision 2026-07-28),
 * for a body that is not read (over the bound): its route name, with no id or arguments (so the
 * MCP fault kinds, which answer with the id, leave it alone). Null without a valid `Mcp-Method`.
 */
export function mcpRequestFromHeaders(headers: Readonly<Record<string, string | string[] | undefined>>): McpRequest | null {
  const method = singleHeader(headers['mcp-method'])
  if (method === null || !METHOD.test(method)) return null
  const target = targetParamOf(method) ? headerName(singleHeader(headers['mcp-name'])) : null
  return { method, id: null, target, arguments: null, session: singleHeader(headers['mcp-session-id']) }
}
