/**
 * The host names a server of toolstorm answers to, against DNS rebinding: a web page whose name
 * was rebound to 127.0.0.1 makes the user's browser send that *name* in `Host` while it talks to
 * a loopback server. The admin API and the data plane (for requests addressed to it: origin-form)
 * both answer only loopback names, IP literals, the `--host` they listen on, and the names given
 * with `--admin-allow-host` / `TOOLSTORM_ADMIN_HOSTS` (admin API) or `--allow-host` /
 * `TOOLSTORM_ALLOW_HOSTS` (data plane): containers and clusters reach them by a service name
 * (`toolstorm`, `toolstorm.staging.svc.cluster.local`).
 *
 * Why names only: an IP literal in `Host` cannot come from a rebinding page (its origin would be
 * that address itself), so any IP literal is accepted, which covers a pod IP or a Service's
 * cluster IP.
 *
 * @example
 * const hosts = parseAllowedHosts(['toolstorm', '*.svc.cluster.local'], '--allow-host')
 * hosts.has('toolstorm.staging.svc.cluster.local') // true
 * isAllowedHostHeader('evil.example.com:8787', hosts) // false
 * @see ../../docs/admin-api.md and ../../docs/proxy.md
 */
import { isIP } from 'node:net'
import { ConfigError } from '../errors.js'

/** A DNS name as `Host` carries it (labels of letters, digits, `-` and `_`), lower-cased. */
const NAME = /^(?=.{1,253}$)[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?(?:\.[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?)*\.?$/

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]', '::1'])

export interface AllowedHosts {
  /** Whether `hostname` (lower-cased, without the port; IPv6 in brackets) was allowed (IP literals always are). */
  has(hostname: string): boolean
}

/**
 * Read allowed hosts: exact names (`toolstorm`), suffixes (`*.svc.cluster.local`: any name that
 * ends with `.svc.cluster.local`), IP literals, or `*` (any name: the Host check is off).
 * `source` names the flag or variable in the error for an entry that is none of these.
 */
export function parseAllowedHosts(entries: readonly string[], source: string): AllowedHosts {
  const exact = new Set<string>()
  const suffixes: string[] = []
  let any = false
  for (const raw of entries) {
    const entry = raw.trim().toLowerCase()
    if (entry === '*') any = true
    else if (entry.startsWith('*.') && NAME.test(entry.slice(2))) suffixes.push(entry.slice(1))
    else if (NAME.test(entry) || isIP(unbracket(entry)) !== 0) exact.add(isIP(entry) === 6 ? `[${entry}]` : entry)
    else throw new ConfigError(`Failed to read ${source}: expected a host name (toolstorm), a suffix (*.svc.cluster.local), an IP address or *, got "${raw}".`, { code: 'ERR_USAGE' })
  }
  return {
    has: (hostname) => any || exact.has(hostname) || isIP(unbracket(hostname)) !== 0 || suffixes.some((suffix) => hostname.endsWith(suffix)),
  }
}

/** Entries of `TOOLSTORM_ADMIN_HOSTS` / `TOOLSTORM_ALLOW_HOSTS`: separated by commas or white space. */
export function splitAllowedHosts(value: string | undefined): string[] {
  return (value ?? '').split(/[\s,]+/).filter(Boolean)
}

/** The hostname part of a Host header (`[::1]:8788` → `[::1]`). */
export function hostnameOf(hostHeader: string): string {
  if (hostHeader.startsWith('[')) return hostHeader.slice(0, hostHeader.indexOf(']') + 1).toLowerCase()
  const colon = hostHeader.lastIndexOf(':')
  return (colon === -1 ? hostHeader : hostHeader.slice(0, colon)).toLowerCase()
}

/** Whether a Host header names this server: a loopback name or address, or one `hosts` allows. */
export function isAllowedHostHeader(hostHeader: string, hosts: AllowedHosts): boolean {
  const name = hostnameOf(hostHeader)
  return LOOPBACK_HOSTS.has(name) || hosts.has(name)
}

function unbracket(name: string): string {
  return name.startsWith('[') && name.endsWith(']') ? name.slice(1, -1) : name
}
