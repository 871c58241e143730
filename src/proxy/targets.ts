/**
 * Where a request goes. Reverse mode: one `--target URL`, or several named targets mounted under
 * `/<name>/`. Forward mode (no target): the absolute-form URL the client sent (HTTP_PROXY).
 */
import { ConfigError } from '../errors.js'
import type { UpstreamTarget } from '../engine/upstream-source.js'

export interface Target {
  /** Mount name (`shop` for `/shop/…`), or null for the unnamed target at `/`. */
  readonly name: string | null
  readonly url: URL
}

export type Resolution =
  | { readonly ok: true; readonly upstream: Upstream; readonly clientUrl: URL }
  | { readonly ok: false; readonly status: number; readonly message: string }

/** Where to send one request: an origin and an origin-form path. */
export type Upstream = UpstreamTarget

const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/

/** Parse `--target` values: `http://host:port[/base]` or `name=http://host:port[/base]`. */
export function parseTargets(values: readonly string[]): Target[] {
  const targets = values.map((value) => {
    const eq = value.indexOf('=')
    const hasName = eq > 0 && !value.slice(0, eq).includes('/')
    const name = hasName ? value.slice(0, eq) : null
    const raw = hasName ? value.slice(eq + 1) : value
    if (name !== null && !NAME.test(name)) throw new ConfigError(`Failed to use --target ${value}: the name "${name}" must be letters, digits, ".", "_" or "-".`, { code: 'ERR_USAGE' })
    let url: URL
    try {
      url = new URL(raw)
    } catch {
      throw new ConfigError(`Failed to use --target ${value}: "${raw}" is not a URL. Expected http(s)://host:port, optionally name=URL.`, { code: 'ERR_USAGE' })
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ConfigError(`Failed to use --target ${value}: only http and https targets are supported.`, { code: 'ERR_USAGE' })
    if (url.username || url.password) throw new ConfigError(`Failed to use --target ${value}: put credentials in headers, not in the target URL.`, { code: 'ERR_USAGE' })
    return { name, url }
  })
  const unnamed = targets.filter((t) => t.name === null)
  if (unnamed.length > 1) throw new ConfigError('Failed to use --target: only one target may be unnamed; name the others (name=URL).', { code: 'ERR_USAGE' })
  const names = new Set<string>()
  for (const t of targets) {
    if (t.name === null) continue
    if (names.has(t.name)) throw new ConfigError(`Failed to use --target: the name "${t.name}" is used twice.`, { code: 'ERR_USAGE' })
    names.add(t.name)
  }
  return targets
}

/** Decide where a request goes. `rawUrl` is `req.url`; `host` is the Host header. */
export function resolveTarget(targets: readonly Target[], rawUrl: string, host: string | undefined, self: string): Resolution {
  if (targets.length === 0) {
    // Forward mode: the client must send an absolute URL.
    if (!/^https?:\/\//i.test(rawUrl)) {
      return { ok: false, status: 400, message: 'This proxy runs in forward mode: send absolute-form requests (set HTTP_PROXY, or use a ProxyAgent), or start it with --target URL.' }
    }
    let url: URL
    try {
      url = new URL(rawUrl)
    } catch {
      return { ok: false, status: 400, message: 'The request target is not a valid URL.' }
    }
    return { ok: true, upstream: { origin: url.origin, host: url.host, path: url.pathname + url.search }, clientUrl: url }
  }
  if (!rawUrl.startsWith('/')) {
    // An absolute-form request for another host (one for this server's own address is served: proxy-server.ts).
    return { ok: false, status: 400, message: `Failed to route "${rawUrl}": this proxy runs in reverse mode (--target) and serves requests for its own address only (origin-form paths, or absolute-form naming it, as HTTP_PROXY clients send them). Run it without --target (forward mode) to reach other hosts through it.` }
  }
  // The path is joined as text: resolved against a base, a path such as `//x/y` would name a host (x).
  const clientUrl = new URL(originOf(host ?? self) + rawUrl)
  for (const target of targets) {
    if (target.name === null) continue
    const prefix = `/${target.name}`
    if (clientUrl.pathname === prefix || clientUrl.pathname.startsWith(prefix + '/')) {
      return { ok: true, upstream: join(target.url, clientUrl.pathname.slice(prefix.length) || '/', clientUrl.search), clientUrl }
    }
  }
  const fallback = targets.find((t) => t.name === null)
  if (fallback) return { ok: true, upstream: join(fallback.url, clientUrl.pathname, clientUrl.search), clientUrl }
  const mounts = targets.map((t) => `/${t.name}/`).join(', ')
  return { ok: false, status: 404, message: `No target is mounted at ${clientUrl.pathname}. The mounted targets are: ${mounts}.` }
}

/** Origins of the Host values seen (a client sends the same few): one URL parse per request, not two. */
const origins = new Map<string, string>()
const MAX_ORIGINS = 256

/** `http://<host>`'s origin; throws as `new URL` does for a malformed host. */
function originOf(host: string): string {
  let origin = origins.get(host)
  if (origin === undefined) {
    origin = new URL(`http://${host}`).origin
    if (host.length > 255) return origin
    if (origins.size >= MAX_ORIGINS) origins.clear()
    origins.set(host, origin)
  }
  return origin
}

function join(base: URL, path: string, search: string): Upstream {
  const basePath = base.pathname.endsWith('/') ? base.pathname.slice(0, -1) : base.pathname
  return { origin: base.origin, host: base.host, path: basePath + path + search }
}
