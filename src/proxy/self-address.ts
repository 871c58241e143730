/**
 * Whether a request names the server's own ports by a name of this machine: forwarded, it would
 * loop back into the server (the data plane, or the admin API it must never reach through itself).
 * The proxy and the replay server answer it with 508, except a request for the data plane of a
 * server that routes origin-form requests itself (targets, a cassette): HTTP_PROXY clients send
 * their base-URL requests that way, and they are served as if sent directly (request-router.ts).
 *
 * Names of this machine: `localhost` (and `*.localhost`, RFC 6761), 127.0.0.0/8, 0.0.0.0/8 (Linux
 * connects 0.0.0.0 to the local host), `::1`, `::`, their IPv4-mapped IPv6 forms
 * (`::ffff:127.0.0.1`), the listen address, and, when that is a wildcard, every local interface
 * address and the host name. IPv4 spellings (`0x7f.1`, `2130706433`, `0177.0.0.1`, `127.1`) need
 * no care here: WHATWG URL parsing already turned them into `127.0.0.1`.
 *
 * @note A DNS name that resolves to this machine is not recognised (that would cost a lookup per
 * request); the admin API's own Host check still refuses such requests.
 */
import { BlockList, isIP } from 'node:net'
import os from 'node:os'

const LOCAL = new BlockList()
LOCAL.addSubnet('127.0.0.0', 8, 'ipv4')
LOCAL.addSubnet('0.0.0.0', 8, 'ipv4')
LOCAL.addAddress('::1', 'ipv6')
LOCAL.addAddress('::', 'ipv6')

const WILDCARDS = new Set(['0.0.0.0', '::'])

/** A URL's host as the checks compare it: no brackets, no trailing dot, lowercase (URL did the rest). */
function hostOf(hostname: string): string {
  const bare = hostname.startsWith('[') ? hostname.slice(1, -1) : hostname
  return (bare.endsWith('.') ? bare.slice(0, -1) : bare).toLowerCase()
}

/** What `listenHost` adds to the names of this machine, normalised as URLs normalise hosts. */
function listenNames(listenHost: string): Set<string> {
  const names = new Set<string>()
  const add = (name: string) => {
    try {
      names.add(hostOf(new URL(`http://${isIP(name) === 6 ? `[${name}]` : name}/`).hostname))
    } catch {
      // Not a host a URL can name: no request can name it either.
    }
  }
  add(listenHost)
  if (WILDCARDS.has(hostOf(listenHost))) {
    add(os.hostname())
    for (const addresses of Object.values(os.networkInterfaces())) for (const { address } of addresses ?? []) add(address.replace(/%.*$/, ''))
  }
  return names
}

/** Whether `host` (from hostOf) names this machine. */
function isLocalName(host: string, extra: ReadonlySet<string>): boolean {
  if (host === 'localhost' || host.endsWith('.localhost') || extra.has(host)) return true
  const family = isIP(host)
  return family !== 0 && LOCAL.check(host, family === 4 ? 'ipv4' : 'ipv6')
}

/**
 * @example
 * const isSelf = createSelfCheck('127.0.0.1', ownPorts)
 * if (isSelf(new URL('http://[::ffff:127.0.0.1]:8788/'))) // 508
 */
export function createSelfCheck(listenHost: string, ownPorts: ReadonlySet<string>): (url: URL) => boolean {
  const names = listenNames(listenHost)
  return (url) => {
    // The port first: it rules out almost every request at the cost of one lookup.
    const port = url.port || (url.protocol === 'https:' ? '443' : '80')
    return ownPorts.has(port) && isLocalName(hostOf(url.hostname), names)
  }
}

/** What a request that would loop names: the admin API, the data plane of a server with nothing to route it to, or a `--target` that is the server. */
export type SelfLoop = 'admin' | 'data plane' | 'target'

/** The 508 message: which address loops, why, and what to do instead. */
export function selfLoopMessage(url: URL, server: 'proxy' | 'replay server', loop: SelfLoop): string {
  const refused = `Refused to forward a request to ${url.host}: that is this ${server} itself`
  if (loop === 'target') return `${refused} (--target names it), so every request would loop. Point --target at the upstream.`
  if (loop === 'data plane') return `${refused} (its data plane, by a name of this machine), and in forward mode it would send the request back to itself. Request the upstream's own URL (HTTP_PROXY sends it here), or start the ${server} with --target URL to use its address as a base URL.`
  return `${refused} (its admin API, by a name of this machine), so the request would loop. Call the admin API directly, not through the ${server}.`
}
