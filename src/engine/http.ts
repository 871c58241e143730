/**
 * The HTTP vocabulary every part speaks: header maps, the request and response as faults see
 * them, toolstorm's own headers, and the few header rules (hop-by-hop, Retry-After) a proxy and an
 * in-process transport must apply alike. Types, constants and pure functions only: the lowest
 * file of the engine, so any file may import it.
 */
export type HeaderMap = Record<string, string | string[] | undefined>

/** A JSON Schema document (a tool's `outputSchema`). */
export type JsonSchema = Record<string, unknown>

/**
 * What plug-ins know of a request, on its view for their own hooks: each plug-in adds its field by
 * declaration merging (src/mcp/mcp-request.ts adds `mcp`). The kernel carries them and reads none.
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type -- plug-ins fill it
export interface RequestDetails {}

/** The request as the fault sees it (read-only), with what the plug-in that named it added. */
export interface RequestView extends RequestDetails {
  readonly method: string
  readonly url: string
  readonly headers: HeaderMap
  /** The route name the plug-in that named the request gave it (MCP: `tools/call create_shipment`); absent when the rules' routes name it. */
  readonly route?: string | undefined
  /** For an MCP tool call: the `outputSchema` the tool declared in a `tools/list` answer seen at this endpoint. */
  readonly outputSchema?: JsonSchema | null
}

/** The upstream response, for faults in the `after-commit` and `on-response` phases. */
export interface ResponseView {
  readonly status: number
  readonly headers: HeaderMap
  /** The whole (decoded) body. Reading it buffers; faults that do not need it must not call it. */
  readBody(): Promise<Uint8Array>
}

/** Request headers toolstorm reads. They are stripped before forwarding (except `x-toolstorm-call`, which it sets). */
export const HEADER_KEY = 'x-toolstorm-key'
export const HEADER_RUN = 'x-toolstorm-run'
/** Set on every forwarded request: the exchange id a tool server reports its effects with. */
export const HEADER_CALL = 'x-toolstorm-call'

/** The headers toolstorm reads from clients; never forwarded. */
export const CONTROL_HEADERS: readonly string[] = [HEADER_KEY, HEADER_RUN]

/**
 * Hop-by-hop headers (RFC 9110 §7.6.1): they describe one connection, so a proxy must not
 * forward them, nor any header the `Connection` header names.
 */
export const HOP_BY_HOP_HEADERS: ReadonlySet<string> = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authorization',
  'proxy-authenticate',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
])

/** The value of a single-valued header (the first of a repeated one). */
export function headerValue(headers: HeaderMap, name: string): string | undefined {
  const value = headers[name]
  if (Array.isArray(value)) return value[0]
  return value
}

/** A 429 or any 5xx (Anthropic's 529 among them): the statuses the SDKs retry, after the delay its `Retry-After` gives. */
export const retryableStatus = (status: number | null): boolean => status === 429 || (status !== null && status >= 500 && status <= 599)

/** The retry delay an upstream advertised on a retryable status (429, 5xx), in seconds. */
export function retryAfterSeconds(status: number, headers: HeaderMap): number | null {
  if (!retryableStatus(status)) return null
  const ms = headerValue(headers, 'retry-after-ms')
  if (ms !== undefined && /^\d+(\.\d+)?$/.test(ms.trim())) return Number(ms) / 1000
  const value = headerValue(headers, 'retry-after')
  if (value === undefined) return null
  if (/^\d+(\.\d+)?$/.test(value.trim())) return Number(value)
  const date = Date.parse(value)
  return Number.isNaN(date) ? null : Math.max(0, (date - Date.now()) / 1000)
}

/** Header map with single string values, minus `drop` (lowercase names). */
export function flattenHeaders(headers: HeaderMap, drop: readonly string[] = []): Record<string, string> {
  const out: Record<string, string> = {}
  for (const [name, value] of Object.entries(headers)) {
    const lower = name.toLowerCase()
    if (value === undefined || drop.includes(lower)) continue
    out[lower] = Array.isArray(value) ? (lower === 'set-cookie' ? value.join('\n') : value.join(', ')) : value
  }
  return out
}

/** A stable code for a transport error: its `code`, its cause's, or its name. */
export function errorCode(error: unknown): string {
  let current: unknown = error
  for (let depth = 0; depth < 4 && current; depth++) {
    const code = (current as { code?: unknown }).code
    if (typeof code === 'string' && code !== 'UND_ERR_SOCKET') return code
    current = (current as { cause?: unknown }).cause
  }
  const code = (error as { code?: unknown })?.code
  if (typeof code === 'string') return code
  return error instanceof Error ? error.name : 'UNKNOWN'
}
