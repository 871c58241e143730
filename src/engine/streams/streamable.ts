/** Which responses a stream fault can act on. */
import type { HeaderMap, RequestView, ResponseView } from '../http.js'

const NO_BODY_STATUSES = new Set([204, 205, 304])

function header(headers: HeaderMap, name: string): string {
  const value = headers[name]
  return (Array.isArray(value) ? value.join(', ') : value ?? '').trim().toLowerCase()
}

/** Whether the response has a body to act on (not a HEAD request, a 1xx, 204 or 304). */
export function hasBody(request: RequestView, response: ResponseView): boolean {
  return request.method !== 'HEAD' && response.status >= 200 && !NO_BODY_STATUSES.has(response.status)
}

/**
 * Whether the response is a Server-Sent Events stream whose events can be read: `text/event-stream`
 * without a content encoding (stream faults ask the upstream for `identity`, and model providers
 * do not compress event streams).
 */
export function isEventStream(request: RequestView, response: ResponseView): boolean {
  if (!hasBody(request, response)) return false
  const encoding = header(response.headers, 'content-encoding')
  return header(response.headers, 'content-type').startsWith('text/event-stream') && (encoding === '' || encoding === 'identity')
}
