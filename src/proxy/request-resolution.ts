/**
 * Where one request of the data plane goes (targets.ts), with malformed input answered instead of
 * thrown: `new URL` throws on a Host such as `a b`, an empty one or `x:99999`, and on an
 * origin-form target such as `//x:99999/`, and one such request used to end the process.
 */
import type { WireRequest } from './http1/wire-request.js'
import { resolveTarget, type Resolution, type Target } from './targets.js'

/** `resolveTarget` for `req` (its target as `url`, when a run prefix was taken off); a 400 naming the malformed part when it cannot be resolved. */
export function resolveRequest(targets: readonly Target[], req: WireRequest, self: string, url: string = req.url): Resolution {
  try {
    return resolveTarget(targets, url, req.headers.host, self)
  } catch {
    // Diagnosed only on this path: the per-request cost stays the one URL targets.ts builds.
    return { ok: false, status: 400, message: malformedPart(req) }
  }
}

function malformedPart(req: WireRequest): string {
  const host = req.headers.host
  if (host !== undefined && !isAuthority(host)) return `Failed to route "${req.method} ${req.url}": the Host header "${host}" is not a valid host[:port] (a port is 0-65535). Send the host you reach the proxy by.`
  return `Failed to route "${req.method} ${req.url}": the request target is not a valid URL path. Send an origin-form path such as "/items?q=1".`
}

function isAuthority(host: string): boolean {
  try {
    new URL(`http://${host}/`)
    return true
  } catch {
    return false
  }
}

/**
 * The URL an origin-form request names when no target routes it (a cassette source may answer it):
 * `http://<Host><path>`. Null for a malformed Host or target, or a request that is not origin-form.
 */
export function unroutedUrl(req: WireRequest, self: string, url: string = req.url): URL | null {
  if (!url.startsWith('/')) return null
  try {
    return new URL(new URL(`http://${req.headers.host ?? self}`).origin + url)
  } catch {
    return null
  }
}

/** The URL of an absolute-form request target (`http://host/path`), or null for any other form or a malformed one. */
export function absoluteUrl(target: string): URL | null {
  if (!/^https?:\/\//i.test(target)) return null
  try {
    return new URL(target)
  } catch {
    return null
  }
}
