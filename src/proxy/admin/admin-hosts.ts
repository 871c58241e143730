/**
 * The host names the admin API answers to, besides loopback: the `--host` it listens on and the
 * names given with `--admin-allow-host` / `TOOLSTORM_ADMIN_HOSTS` (containers and clusters reach
 * it by a service name: `toolstorm`, `toolstorm.staging.svc.cluster.local`).
 *
 * Why names only: DNS rebinding makes a browser send a page's *name* in `Host` while it talks to
 * this server, so names must be allowed one by one. An IP literal in `Host` cannot come from a
 * rebinding page (its origin would be that address itself), so any IP literal is accepted, which
 * covers a pod IP or a Service's cluster IP.
 *
 * @example
 * const hosts = parseAdminHosts(['toolstorm', '*.svc.cluster.local'], '--admin-allow-host')
 * hosts.has('toolstorm.staging.svc.cluster.local') // true
 * @see ../../../docs/admin-api.md
 */
import { isIP } from 'node:net'
import { ConfigError } from '../../errors.js'

/** A DNS name as `Host` carries it (labels of letters, digits, `-` and `_`), lower-cased. */
const NAME = /^(?=.{1,253}$)[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?(?:\.[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?)*\.?$/

export interface AdminHosts {
  /** Whether `hostname` (lower-cased, without the port; IPv6 in brackets) may address the admin API. */
  has(hostname: string): boolean
}

/**
 * Read allowed hosts: exact names (`toolstorm`), suffixes (`*.svc.cluster.local`: any name that
 * ends with `.svc.cluster.local`), IP literals, or `*` (any name: the Host check is off).
 * `source` names the flag or variable in the error for an entry that is none of these.
 */
export function parseAdminHosts(entries: readonly string[], source: string): AdminHosts {
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

/** Entries of `TOOLSTORM_ADMIN_HOSTS`: separated by commas or white space. */
export function splitAdminHosts(value: string | undefined): string[] {
  return (value ?? '').split(/[\s,]+/).filter(Boolean)
}

function unbracket(name: string): string {
  return name.startsWith('[') && name.endsWith(']') ? name.slice(1, -1) : name
}
