/**
 * The target of a CONNECT request: authority form, `host:port` (RFC 9110 §9.3.6), where host is a
 * DNS name, an IPv4 address or a bracketed IPv6 address, and the port is required.
 */
import net from 'node:net'

export interface ConnectTarget {
  /** Lowercase DNS name or IP address, without brackets. */
  readonly host: string
  readonly port: number
  /** `host:port` as it goes in a URL (IPv6 bracketed). */
  readonly authority: string
}

const AUTHORITY = /^(?:\[([0-9A-Fa-f:.]+)\]|([^\s:/?#@[\]]+)):(\d{1,5})$/
/** DNS names as clients send them: letters, digits, '-', '_' (common in internal names), dots. */
const DNS_NAME = /^(?=.{1,253}\.?$)[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?(?:\.[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?)*\.?$/

/** Parse a CONNECT request target; null when it is not `host:port`. */
export function parseConnectTarget(requestTarget: string): ConnectTarget | null {
  const match = AUTHORITY.exec(requestTarget)
  if (!match) return null
  const [, ipv6, name, rawPort] = match
  const port = Number(rawPort)
  if (!Number.isInteger(port) || port < 1 || port > 65_535) return null
  if (ipv6 !== undefined) {
    if (net.isIPv6(ipv6) === false) return null
    const host = ipv6.toLowerCase()
    return { host, port, authority: `[${host}]:${port}` }
  }
  const host = (name as string).toLowerCase().replace(/\.$/, '')
  if (net.isIPv4(host) === false && !DNS_NAME.test(host)) return null
  return { host, port, authority: `${host}:${port}` }
}
