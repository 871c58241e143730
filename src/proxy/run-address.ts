/**
 * A run named by the address a client was given, so that a test's clients need no header: a path
 * prefix on a base URL (`/_run/<id>/…`), or the user name of proxy credentials
 * (`HTTP_PROXY=http://<id>:x@127.0.0.1:8787`, which curl, requests, httpx, urllib and undici send as
 * `Proxy-Authorization: Basic …`). The pytest plugin hands each test such addresses.
 *
 * Forward mode has no target to send a base-URL request to, so there the prefix names the upstream
 * too: `/_run/<id>/<http|https>/<host:port>/<path>` is the absolute-form request
 * `<scheme>://<host:port>/<path>`. In reverse mode the rest of the path goes to the targets as usual.
 * @see ../../docs/proxy.md#runs-parallel-workers-on-one-proxy
 */
import type { IncomingHttpHeaders } from 'node:http'
import { RUN_ID } from '../engine/run.js'

export const RUN_PREFIX = '/_run/'

export type AddressedRun = { readonly ok: true; readonly run: string; readonly url: string } | { readonly ok: false; readonly message: string }

/**
 * The run and the request target behind a `/_run/<id>/…` path (`rawUrl` starts with `RUN_PREFIX`):
 * the target without the prefix (forward mode: the absolute URL the rest names).
 */
export function addressedRun(rawUrl: string, forward: boolean): AddressedRun {
  const end = rawUrl.indexOf('/', RUN_PREFIX.length)
  const run = rawUrl.slice(RUN_PREFIX.length, end === -1 ? undefined : end)
  if (!RUN_ID.test(run)) return { ok: false, message: `Failed to route "${rawUrl.slice(0, 200)}": "${run.slice(0, 140)}" is not a run id (1-128 letters, digits, ".", "_", "~" or "-"). Address a run as /_run/<id>/….` }
  const rest = end === -1 ? '/' : rawUrl.slice(end)
  if (!forward) return { ok: true, run, url: rest }
  const upstream = /^\/(https?)\/([^/?#]+)(.*)$/i.exec(rest)
  if (!upstream) {
    return { ok: false, message: `Failed to route "${rawUrl.slice(0, 200)}": this proxy runs in forward mode, so after /_run/${run}/ the path names the upstream: /_run/${run}/http/<host:port>/<path> (or https).` }
  }
  const [, scheme, authority, path] = upstream as unknown as [string, string, string, string]
  return { ok: true, run, url: `${scheme.toLowerCase()}://${authority}${path.startsWith('/') ? path : `/${path}`}` }
}

/** The run named by the user name of `Proxy-Authorization: Basic …`, if it is a valid run id. */
export function proxyCredentialsRun(headers: IncomingHttpHeaders): string | undefined {
  const value = headers['proxy-authorization']
  if (value === undefined || !/^basic /i.test(value)) return undefined
  const decoded = Buffer.from(value.slice(6).trim(), 'base64').toString('utf8')
  const colon = decoded.indexOf(':')
  const user = decodeUserName(colon === -1 ? decoded : decoded.slice(0, colon))
  return user !== undefined && RUN_ID.test(user) ? user : undefined
}

/** Clients send the user name of a proxy URL percent-decoded, most of them; a stray encoding is undone here. */
function decodeUserName(user: string): string | undefined {
  try {
    return decodeURIComponent(user)
  } catch {
    return undefined
  }
}
