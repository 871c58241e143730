/**
 * Admin API access checks: a bearer token, and a Host/Origin allowlist against DNS rebinding
 * (a web page must not drive the admin API through the user's browser).
 */
import { timingSafeEqual } from 'node:crypto'
import type http from 'node:http'
import { isAllowedHostHeader, type AllowedHosts } from '../allowed-hosts.js'

/** Whether the Host (and Origin, when sent) name this admin server rather than some other site. */
export function isAllowedHost(req: http.IncomingMessage, extraHosts: AllowedHosts): boolean {
  const host = req.headers.host
  if (!host || !isAllowedHostHeader(host, extraHosts)) return false
  const origin = req.headers.origin
  if (origin !== undefined && origin !== 'null') {
    try {
      const originHost = new URL(origin).host
      if (originHost.toLowerCase() !== host.toLowerCase()) return false
    } catch {
      return false
    }
  }
  return true
}

/** Constant-time comparison of the presented bearer token (or `?token=`) with the expected one. */
export function hasValidToken(req: http.IncomingMessage, url: URL, token: string): boolean {
  const header = req.headers.authorization
  const presented = header?.startsWith('Bearer ') ? header.slice(7).trim() : url.searchParams.get('token')
  if (!presented) return false
  const a = Buffer.from(presented)
  const b = Buffer.from(token)
  return a.length === b.length && timingSafeEqual(a, b)
}
