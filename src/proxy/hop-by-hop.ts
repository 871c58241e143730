/**
 * Hop-by-hop headers (RFC 9110 §7.6.1): they describe one connection, so a proxy must not
 * forward them, nor any header the `Connection` header names.
 */
import type { IncomingHttpHeaders } from 'node:http'
import { HOP_BY_HOP_HEADERS } from '../engine/http.js'

/** Names listed in `Connection` (lowercase). */
export function connectionTokens(headers: IncomingHttpHeaders | Record<string, string | string[] | undefined>): string[] {
  const value = headers.connection
  if (value === undefined) return []
  return (Array.isArray(value) ? value.join(',') : value)
    .split(',')
    .map((token) => token.trim().toLowerCase())
    .filter(Boolean)
}

/** `Connection` values that name no extra header. */
const PLAIN_CONNECTION = new Set(['keep-alive', 'close'])

/**
 * Copy `headers` without hop-by-hop headers and without `drop` (lowercase names).
 * Node and undici hand us lowercase names already; this runs on every proxied message.
 */
export function endToEndHeaders(headers: Record<string, string | string[] | undefined>, drop: readonly string[] = []): Record<string, string | string[]> {
  const connection = headers.connection
  const extra = connection === undefined || (typeof connection === 'string' && PLAIN_CONNECTION.has(connection.toLowerCase())) ? null : connectionTokens(headers)
  const out: Record<string, string | string[]> = {}
  for (const name in headers) {
    const value = headers[name]
    if (value === undefined || HOP_BY_HOP_HEADERS.has(name)) continue
    if (drop.length !== 0 && drop.includes(name)) continue
    if (extra !== null && extra.includes(name)) continue
    out[name] = value
  }
  return out
}
