/**
 * Where each data-plane request goes, with requests addressed to the server itself handled:
 * clients that honour HTTP_PROXY send their base-URL requests to the server addressed to the
 * server (absolute-form `GET http://127.0.0.1:8787/v1/…`, or for Node's fetch with
 * NODE_USE_ENV_PROXY a `CONNECT 127.0.0.1:8787` tunnel). Such a request is served as the
 * origin-form request it stands for when this server routes origin-form requests itself (reverse
 * targets, or a source that answers by itself: a cassette), because nothing then goes back to the
 * server. It is a loop, answered 508, only for the admin API's port, for the data plane of a
 * forward proxy (nothing to route it to), and for a `--target` that is the server itself.
 *
 * @example
 * const router = new RequestRouter(targets, '127.0.0.1', { routesItself: false, selfName: 'proxy' })
 * router.listening('127.0.0.1:8787', 8787, 8788)
 * const route = router.route(req) // { type: 'serve', upstream, clientUrl, rawUrl } or a refusal
 */
import type { WireRequest } from './http1/wire-request.js'
import { absoluteUrl, resolveRequest, unroutedUrl } from './request-resolution.js'
import { createSelfCheck, selfLoopMessage, type SelfLoop } from './self-address.js'
import { resolveTarget, type Resolution, type Target, type Upstream } from './targets.js'
import { parseConnectTarget } from './tls/connect-target.js'
import { addressedRun, proxyCredentialsRun, RUN_PREFIX } from './run-address.js'
import { HEADER_RUN } from '../engine/http.js'

export type Route =
  /**
   * Serve it: `upstream` null when only the source can answer (a cassette); `rawUrl` is what the
   * source matches; `run`: the run its address names (run-address.ts), if any.
   */
  | { readonly type: 'serve'; readonly upstream: Upstream | null; readonly clientUrl: URL; readonly rawUrl: string; readonly run: string | undefined }
  /** Answer with this error (ERR_REQUEST_UNROUTABLE); nothing is forwarded. */
  | { readonly type: 'refuse'; readonly status: number; readonly message: string }

export interface RouterOptions {
  /** The source answers requests that name no upstream (a cassette). */
  readonly routesItself: boolean
  /** How refusals name this server. */
  readonly selfName: 'proxy' | 'replay server'
}

export class RequestRouter {
  readonly #targets: readonly Target[]
  readonly #options: RouterOptions
  readonly #ownPorts = new Set<string>()
  readonly #dataPlanePorts = new Set<string>()
  /** Forwarded, a request naming one of the server's ports (by any name of this machine) would loop. */
  readonly #isSelf: (url: URL) => boolean
  readonly #isDataPlane: (url: URL) => boolean
  /** Origins of targets that are this server: a request routed to one would loop. */
  readonly #selfTargets = new Set<string>()
  /** Whether origin-form requests are served without going back through this server. */
  readonly #routesOriginForm: boolean
  #self = ''

  constructor(targets: readonly Target[], listenHost: string, options: RouterOptions) {
    this.#targets = targets
    this.#options = options
    this.#isSelf = createSelfCheck(listenHost, this.#ownPorts)
    this.#isDataPlane = createSelfCheck(listenHost, this.#dataPlanePorts)
    this.#routesOriginForm = targets.length > 0 || options.routesItself
  }

  /** The server's own ports (data plane and admin API): never reachable through it. */
  get ownPorts(): ReadonlySet<string> {
    return this.#ownPorts
  }

  /** The server listens: `self` is the data plane's `host:port` (the Host of requests that send none). */
  listening(self: string, dataPort: number, adminPort: number): void {
    this.#self = self
    this.#ownPorts.add(String(dataPort)).add(String(adminPort))
    this.#dataPlanePorts.add(String(dataPort))
    for (const target of this.#targets) if (this.#isSelf(target.url)) this.#selfTargets.add(target.url.origin)
  }

  route(req: WireRequest): Route {
    const targets = this.#targets
    const forward = targets.length === 0
    // The run the client's address names: proxy credentials (forward mode, no x-toolstorm-run), or a /_run/<id>/ prefix.
    const named = runAddressed(req.url, forward, forward ? credentialsRun(req) : undefined)
    if (!named.ok) return { type: 'refuse', status: 400, message: named.message }
    const { url: rawUrl, run } = named
    const resolution = resolveRequest(targets, req, this.#self, rawUrl)
    if (resolution.ok && forward && this.#isSelf(resolution.clientUrl)) return this.#ownAddress(resolution.clientUrl, run)
    if (!resolution.ok && !forward) {
      // Reverse mode refuses absolute-form requests, except those addressed to this server.
      const own = absoluteUrl(rawUrl)
      if (own && this.#isSelf(own)) return this.#ownAddress(own, run)
    }
    return this.#routed(resolution, resolution.ok || !this.#options.routesItself ? null : unroutedUrl(req, this.#self, rawUrl), rawUrl, run)
  }

  /** Whether a CONNECT to `authority` opens a tunnel to this server's own data plane that is served here. */
  tunnelsHere(authority: string): boolean {
    if (!this.#routesOriginForm) return false
    const target = parseConnectTarget(authority)
    return target !== null && this.#isDataPlane(new URL(`http://${target.authority}/`))
  }

  /** `resolution` as a route; `unrouted`: the URL a self-routing source may still answer when no target routes it. */
  #routed(resolution: Resolution, unrouted: URL | null, rawUrl: string, run: string | undefined): Route {
    if (!resolution.ok) {
      if (unrouted) return { type: 'serve', upstream: null, clientUrl: unrouted, rawUrl, run }
      return { type: 'refuse', status: resolution.status, message: resolution.message }
    }
    if (this.#selfTargets.size && this.#selfTargets.has(resolution.upstream.origin)) return this.#loop(new URL(resolution.upstream.origin), 'target')
    return { type: 'serve', upstream: resolution.upstream, clientUrl: resolution.clientUrl, rawUrl, run }
  }

  /** An absolute-form request naming this server's own ports: its base URL through HTTP_PROXY, or a loop. */
  #ownAddress(url: URL, run: string | undefined): Route {
    if (!this.#isDataPlane(url)) return this.#loop(url, 'admin')
    // Served as the origin-form request it stands for, its run prefix too: matched and recorded by its path, as a direct one.
    const path = url.pathname + url.search
    const forward = this.#targets.length === 0
    const named = runAddressed(path, forward, run)
    if (!named.ok) return { type: 'refuse', status: 400, message: named.message }
    // In forward mode only a run prefix names where it goes (its upstream), and never this server again.
    const upstreamNamed = forward && named.url !== path
    if (!this.#routesOriginForm && !upstreamNamed) return this.#loop(url, 'data plane')
    const resolution = resolveTarget(this.#targets, named.url, url.host, this.#self)
    if (upstreamNamed && resolution.ok && this.#isSelf(resolution.clientUrl)) return this.#loop(resolution.clientUrl, 'data plane')
    const unrouted = this.#options.routesItself && named.url.startsWith('/') ? new URL(url.origin + named.url) : null
    return this.#routed(resolution, unrouted, named.url, named.run)
  }

  #loop(url: URL, loop: SelfLoop): Route {
    return { type: 'refuse', status: 508, message: selfLoopMessage(url, this.#options.selfName, loop) }
  }
}

/** The run proxy credentials name, unless the request names one itself (`x-toolstorm-run` is meant; credentials may be incidental). */
function credentialsRun(req: WireRequest): string | undefined {
  return req.headers['proxy-authorization'] === undefined || req.headers[HEADER_RUN] !== undefined ? undefined : proxyCredentialsRun(req.headers)
}

/** `target` without a `/_run/<id>/` prefix and the run it names (else `run`); a 400 message for a malformed one. */
function runAddressed(target: string, forward: boolean, run: string | undefined): { ok: true; url: string; run: string | undefined } | { ok: false; message: string } {
  if (!target.startsWith(RUN_PREFIX)) return { ok: true, url: target, run }
  const addressed = addressedRun(target, forward)
  return addressed.ok ? { ok: true, url: addressed.url, run: addressed.run } : addressed
}
