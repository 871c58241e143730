/**
 * Hop-by-hop headers (RFC 9110 §7.6.1): they describe one connection, so a proxy must not
 * forward them, nor any header the `Connection` header names.
 */
import type { IncomingHttpHeaders } from 'node:http'

export const HOP_BY_HOP_HEADERS = new Set([
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

/** Names listed in `Connection` (lowercase). */
export function connectionTokens(headers: IncomingHttpHeaders | Record<string, string | string[] | undefined>): string[] {
  const value = headers.connection
  if (value === undefined) return []
  return (Array.isArray(value) ? value.join(',') : value)
    .split(',')
    .map((token) => token.trim().toLowerCase())
    .filter(Boolean)
}

/** Copy `headers` without hop-by-hop headers and without `drop` (lowercase names). */
export function endToEndHeaders(headers: Record<string, string | string[] | undefined>, drop: Iterable<string> = []): Record<string, string | string[]> {
  const skip = new Set([...HOP_BY_HOP_HEADERS, ...connectionTokens(headers), ...drop])
  const out: Record<string, string | string[]> = {}
  for (const name in headers) {
    const value = headers[name]
    if (value === undefined) continue
    const lower = name.toLowerCase()
    if (skip.has(lower)) continue
    out[lower] = value
  }
  return out
}
