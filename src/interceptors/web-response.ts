/**
 * Exchange answers as fetch `Response`s, for every environment that answers a client with one
 * (the interceptors, MSW handlers, cassette replay in-process, the demo's memory transport).
 * No Node imports: the browser lab bundles it.
 */
import type { HeaderMap } from '../engine/http.js'

/** Statuses a `Response` must be built without a body (the Fetch standard's null body statuses, and 103). */
export const NULL_BODY_STATUSES: ReadonlySet<number> = new Set([101, 103, 204, 205, 304])

/** Framing headers a relayed body does not keep: the receiving side frames it again. */
const FRAMING_HEADERS = new Set(['transfer-encoding', 'connection', 'keep-alive'])

/**
 * Web `Headers` from a header map. Each `set-cookie` stays its own field line, whether it arrives
 * as a list or as lines joined with "\n" (`flattenHeaders`): joined with ", " a cookie whose
 * `Expires` holds a comma would read as two. Names are lowercased; hop-by-hop framing is dropped.
 */
export function toWebHeaders(headers: HeaderMap): Headers {
  const out = new Headers()
  for (const [name, value] of Object.entries(headers)) {
    const lower = name.toLowerCase()
    if (value === undefined || FRAMING_HEADERS.has(lower)) continue
    if (lower === 'set-cookie') {
      for (const line of Array.isArray(value) ? value : [value]) for (const cookie of line.split('\n')) out.append(lower, cookie)
    } else {
      out.set(lower, Array.isArray(value) ? value.join(', ') : value)
    }
  }
  return out
}

/** A header map from web `Headers` (lowercase names), with `set-cookie` kept as a list. */
export function fromWebHeaders(headers: Headers): HeaderMap {
  const out: HeaderMap = {}
  headers.forEach((value, name) => {
    if (name !== 'set-cookie') out[name] = value
  })
  const cookies = headers.getSetCookie()
  if (cookies.length) out['set-cookie'] = cookies
  return out
}

/** The client's `Response`: no body where the status forbids one; informational statuses (< 200) read as 200, which a `Response` requires. */
export function toWebResponse(status: number, headers: HeaderMap, body: ConstructorParameters<typeof Response>[0]): Response {
  return new Response(NULL_BODY_STATUSES.has(status) ? null : body, { status: Math.max(200, status), headers: toWebHeaders(headers) })
}
