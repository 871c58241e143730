/**
 * W3C Trace Context (`traceparent: 00-<trace id>-<parent span id>-<flags>`): what joins a request
 * on the wire to the agent's spans. The proxy and in-process interception read it on every
 * request, and MCP's `params._meta.traceparent`, so it is parsed by hand: a regular expression on
 * a 55-character string is the whole cost, where a tracing SDK would be a dependency of every
 * request path.
 *
 * @see https://www.w3.org/TR/trace-context/#traceparent-header
 */

/** The trace and the span a request was made under. Ids are lowercase hex, as OTLP/JSON writes them. */
export interface TraceContext {
  /** 32 hex digits. */
  readonly traceId: string
  /** 16 hex digits: the span that was active when the request was sent (its parent). */
  readonly parentSpanId: string
}

// Version 00 is exactly 55 characters; later versions may append fields after the flags (the
// spec asks parsers of an unknown version to read the first four). Version ff is invalid. One
// case-insensitive regular expression and no copies of the value: this runs on every request.
const TRACEPARENT = /^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}(?:-|$)/i
const ZERO_TRACE = '00000000000000000000000000000000'
const ZERO_SPAN = '0000000000000000'

/** The trace context a `traceparent` value names, or null when it is absent or not valid. */
export function parseTraceparent(value: string | null | undefined): TraceContext | null {
  if (typeof value !== 'string' || value.length < 55 || value.length > 512) return null
  // Fixed positions: a test and three slices (no capture groups to allocate).
  if (!TRACEPARENT.test(value)) return null
  const version = value.slice(0, 2).toLowerCase()
  if (version === 'ff' || (version === '00' && value.length !== 55)) return null
  const traceId = value.slice(3, 35).toLowerCase()
  const parentSpanId = value.slice(36, 52).toLowerCase()
  if (traceId === ZERO_TRACE || parentSpanId === ZERO_SPAN) return null
  return { traceId, parentSpanId }
}
