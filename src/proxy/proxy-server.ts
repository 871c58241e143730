/**
 * The standalone proxy: a data plane (reverse or forward mode) and an admin server, both on
 * loopback unless told otherwise, over one storm.
 *
 * @example
 * const proxy = await startProxy({ targets: ['http://127.0.0.1:4000'], config: { rules: [...] } })
 * // point the agent at proxy.url; the tool server reports effects to proxy.adminUrl + '/effects'
 * await proxy.close()
 */
import { effectsRegistry } from '../effects/toolstorm-effects.js'
import type { Socket } from 'node:net'
import type { Duplex } from 'node:stream'
import { ConfigError } from '../errors.js'
import { createServe, type ServeEntry } from '../engine/serve.js'
import { checkProxyOptions, type ProxyOptions } from './proxy-options.js'
import { createStorm } from '../create-storm.js'
import type { BeginRequest, Storm } from '../engine/storm.js'
import { HEADER_RUN } from '../engine/http.js'
import { isAllowedHostHeader, parseAllowedHosts } from './allowed-hosts.js'
import { adminHandler } from './admin/admin-service.js'
import { adminToken, createAdminHttpServer } from './admin/admin-http-server.js'
import { answerClientError, createDataPlaneServer, failExchange, sendProxyError } from './data-plane-server.js'
import { guardObserver, printExchangeFailure } from './exchange-failure.js'
import { DASHBOARD_PATH } from './admin/dashboard.js'
import type { RequestBody, WireRequest } from './http1/wire-request.js'
import { transportPlugins } from '../options/transport-plugins.js'
import { peekBody } from './peek-body.js'
import { proxyObservers } from './proxy-recording.js'
import type { CassetteRecorder } from '../cassette/record/cassette-recorder.js'
import { incidentRoutes } from '../incidents/incident-routes.js'
import { startFlightRecorder } from '../incidents/start-flight-recorder.js'
import type { FlightRecorder } from '../incidents/flight-recorder.js'
import type { WireResponse } from './http1/wire-response.js'
import type { WireServer } from './http1/wire-server.js'
import { createLiveSource } from './upstream/live-source.js'
import { createSocketTransport, type SinkRoute } from './sink/socket-sink.js'
import { beginInLedger } from './begin-in-ledger.js'
import type { RedisRunState } from '../state/redis-run-state.js'
import { CLOSE_GRACE_MS, closePair, formatOrigin, listenPair, LOOPBACK } from './server-pair.js'
import { createUpstreamClient } from './upstream/upstream-client.js'
import { RequestRouter } from './request-router.js'
import { createUpstreamFailures } from './upstream/upstream-failures.js'
import { parseTargets, type Target, type Upstream } from './targets.js'
import { createInMemoryCertificateAuthority, type CertificateAuthority } from './tls/certificate-authority.js'
import { createConnectHandler, refuseTunnel } from './tls/connect-handler.js'
import { createInterceptPredicate } from './tls/intercepted-hosts.js'
import { LeafCertificates, type CertificateAuthoritySource } from './tls/leaf-certificates.js'
import { upstreamConnectOptions } from './tls/upstream-tls.js'

export type { ProxyOptions } from './proxy-options.js'

export type ProxyState = 'listening' | 'closing' | 'closed'

/** One request at the front door: `req` is replaced by the one whose body was read first, if it was. */
interface ProxyEntry extends ServeEntry {
  req: WireRequest
  readonly res: WireResponse
}

export interface ProxyServer {
  readonly url: string
  readonly adminUrl: string
  /** The dashboard page (open it with `#token=<token>`), or null when it is off. */
  readonly dashboardUrl: string | null
  readonly token: string
  /**
   * What a tool server needs to report effects here: `TOOLSTORM_SIDECAR` and
   * `TOOLSTORM_ADMIN_TOKEN`, to pass to a child process's environment. In this process
   * `reportEffect()` finds the newest running proxy by itself.
   */
  readonly effectsEnv: { readonly TOOLSTORM_SIDECAR: string; readonly TOOLSTORM_ADMIN_TOKEN: string }
  readonly storm: Storm
  readonly mode: 'reverse' | 'forward'
  readonly targets: readonly Target[]
  readonly readyState: ProxyState
  /** The data-plane server (for CONNECT handlers and tests). */
  readonly server: WireServer
  /** Forward mode: the CA whose leaves intercepted HTTPS clients see (trust its `certificatePem`). Null in reverse mode, and until the first intercepted TLS handshake when `ca` is a function. */
  readonly ca: CertificateAuthority | null
  /** Where responses come from (the live source unless `source` was given). */
  readonly source: NonNullable<ProxyOptions['source']>
  /** The shared state store (with `state`), else null. */
  readonly state: RedisRunState | null
  /** The recorder `record` started (its cassette is written on `close()`), else null. */
  readonly recorder: CassetteRecorder | null
  /** The flight recorder `incidents` started (docs/incidents.md), else null. */
  readonly incidents: FlightRecorder | null
  close(): Promise<void>
  [Symbol.asyncDispose](): Promise<void>
}

export async function startProxy(options: ProxyOptions = {}): Promise<ProxyServer> {
  checkProxyOptions(options)
  const host = options.host ?? '127.0.0.1'
  const targets = parseTargets(options.targets ?? [])
  // A storm made here takes the proxy's plug-ins (and so the kinds its rules may use); a storm given is served with its own.
  const storm = options.storm ?? createStorm(options.config ?? {}, { clock: options.clock, plugins: options.plugins, modelCalls: options.modelCalls })
  const token = adminToken(options.adminToken, options.selfName ?? 'proxy')
  const listenHost = LOOPBACK.has(host) ? [] : [host]
  const allowedHosts = parseAllowedHosts([...listenHost, ...(options.adminAllowHosts ?? [])], 'adminAllowHosts')
  const dataPlaneHosts = parseAllowedHosts([...listenHost, ...(options.allowHosts ?? [])], 'allowHosts')
  const upstreamTls = upstreamConnectOptions(options)
  if (upstreamTls && options.dispatcher !== undefined) throw new ConfigError('Failed to start the proxy: upstreamCa and insecureSkipUpstreamTlsVerification configure the proxy\'s own dispatcher. Set the TLS options on your dispatcher instead.', { code: 'ERR_USAGE' })
  const report = options.onExchangeError ?? printExchangeFailure
  const { observer, recorder, incidentLines } = proxyObservers(storm, { record: options.record, observer: options.observer, targets: options.targets ?? [], incidents: options.incidents })
  // Whether the recording appends to a cassette there (or refuses a file it may not touch) is known before the first request.
  const recording = await recorder?.ready().catch(async (error: unknown) => {
    await recorder.discard()
    throw error
  })
  if (recording) options.warn?.(recording.message)
  const client = createUpstreamClient({ dispatcher: options.dispatcher, tls: upstreamTls, onHandlerError: report })
  const failures = createUpstreamFailures((url) => storm.redactor.url(url), options.warn)
  const live = createLiveSource(client, failures)
  const source = options.source ?? live
  // The fast path drives the live pool directly: only when the live source answers.
  const pool = source === live ? client : null
  // Forward mode intercepts HTTPS with leaves of this CA.
  let ca: CertificateAuthority | null = null
  let caSource: CertificateAuthoritySource | null = null
  if (targets.length === 0) {
    const given = options.ca ?? (await createInMemoryCertificateAuthority())
    // A function makes the CA on the first TLS handshake in a tunnel; `ca` shows it from then on.
    caSource = typeof given === 'function' ? async () => (ca = await given()) : (ca = given)
  }
  const ownsState = options.state !== undefined && !('begin' in options.state)
  // The Redis client loads only with a state store: proxies in memory never pay for it.
  const shareState = options.state === undefined ? null : 'begin' in options.state ? options.state : await (await import('../state/redis-run-state.js')).connectRedisState(storm, options.state)

  const server = createDataPlaneServer(report)
  const admin = createAdminHttpServer()
  admin.on('clientError', answerClientError)

  // Where each request goes; requests addressed to the server itself (HTTP_PROXY clients) included.
  const router = new RequestRouter(targets, host, { routesItself: source.routesItself === true, selfName: options.selfName ?? 'proxy' })
  // One front door for every request, direct or from inside a CONNECT tunnel (engine/serve.ts).
  // Where runs are kept: the storm's memory, or the shared store; nothing below asks which.
  const ledger = shareState ?? storm.ledger
  const beginning = { storm, ledger, policy: options.stateUnavailable ?? 'fail', report } as const
  const serveExchange = createServe<ProxyEntry>(storm, {
    ...(options.storm ? transportPlugins(options, 'startProxy({ storm })') : {}),
    observer,
    guard: (observer) => guardObserver(observer, report),
    // In memory, begin() stays synchronous: the shared store's await is only paid with --state.
    begin: (request: BeginRequest, entry: ProxyEntry) => beginInLedger(beginning, request, entry.req, entry.res),
  })
  /** `runId`: the run the client's address names (run-address.ts), which wins over its `x-toolstorm-run`. */
  const serve = (req: WireRequest, res: WireResponse, upstream: Upstream | null, clientUrl: URL, rawUrl: string = req.url, runId: string | undefined = undefined) => {
    const route: SinkRoute = { source, live, upstream, pool }
    const entry: ProxyEntry = {
      req,
      res,
      readBody: (limit) =>
        peekBody(entry.req as WireRequest & { body: RequestBody }, limit).then(
          (read) => {
            entry.req = read.req
            return { bytes: read.bytes }
          },
          // The client broke off while sending its body: there is no one to answer.
          () => {
            res.destroy()
            return null
          },
        ),
      open: (exchange) => createSocketTransport(entry.req, res, exchange, rawUrl, route),
    }
    // Synchronous throws are caught by the wire server; this catches the exchange's own promise.
    const served = serveExchange({ method: req.method, url: clientUrl, headers: req.headers, hasBody: req.body !== null, run: runId }, entry)
    if (served) served.catch((error: unknown) => failExchange(report, error, entry.req, res))
  }
  server.on('request', (req, res) => {
    // Where it goes, and the run its address names (a /_run/<id>/ prefix, proxy credentials): request-router.ts.
    const route = router.route(req)
    if (route.type === 'refuse') return sendProxyError(res, route.status, 'ERR_REQUEST_UNROUTABLE', route.message)
    // An origin-form request is addressed to this server, so its Host must name it: the upstream
    // gets the target's Host and can no longer refuse a DNS-rebinding page's name itself.
    // Absolute-form requests (and those in CONNECT tunnels, served elsewhere) name their target.
    const hostHeader = req.headers.host
    if (req.url.startsWith('/') && hostHeader !== undefined && !isAllowedHostHeader(hostHeader, dataPlaneHosts)) {
      return sendProxyError(res, 403, 'ERR_HOST_NOT_ALLOWED', `Failed to serve "${req.method} ${storm.redactor.url(req.url)}": its Host header "${hostHeader}" names another site, as a web page's request does after DNS rebinding, so it was not forwarded. Address the ${options.selfName ?? 'proxy'} by a loopback address or the --host it listens on, or allow the name with --allow-host (TOOLSTORM_ALLOW_HOSTS).`)
    }
    serve(req, res, route.upstream, route.clientUrl, route.rawUrl, route.run)
  })
  const leaves = caSource && new LeafCertificates(caSource)
  const connect = leaves
    ? createConnectHandler({
        leaves,
        ownPorts: router.ownPorts,
        // The CONNECT's credentials name the run of the requests inside, unless one says otherwise (x-toolstorm-run).
        serve: (req, res, upstream, clientUrl, runId) => serve(req, res, upstream, clientUrl, clientUrl.href, req.headers[HEADER_RUN] === undefined ? runId : undefined),
        report,
        ...(options.connectPorts || source.connectPorts ? { connectPorts: [...(source.connectPorts ?? []), ...(options.connectPorts ?? [])] } : {}),
        ...(options.tunnelUnmatched ? { intercept: createInterceptPredicate(() => storm.config, storm.protocol.checkRoute) } : {}),
        ...(options.onCertificateRefused ? { onCertificateRefused: options.onCertificateRefused } : {}),
      })
    : null
  server.on('connect', (req: WireRequest, duplex: Duplex, head: Buffer) => {
    const socket = duplex as Socket
    socket.on('error', () => undefined)
    // Node's NODE_USE_ENV_PROXY tunnels even http:// base-URL requests: CONNECT to this very port.
    if (router.tunnelsHere(req.url)) return serveTunnelHere(socket, head)
    if (connect) return connect.listener(req, socket, head)
    refuseTunnel(socket, 400, `Failed to open a tunnel to "${req.url}": this ${options.selfName ?? 'proxy'} runs in reverse mode (--target) and serves its own address only. Run it without --target (forward mode) to reach other hosts through it.`)
  })
  /** A tunnel to this server's own data plane: its requests are served here, as if sent directly. */
  const serveTunnelHere = (socket: Socket, head: Buffer) => {
    if (state !== 'listening') return socket.destroy()
    socket.write('HTTP/1.1 200 Connection Established\r\n\r\n')
    socket.pause()
    if (head.length) socket.unshift(head)
    server.handleConnection(socket)
    socket.resume()
  }

  const warn = options.warn
  const incidents =
    options.incidents && incidentLines
      ? await startFlightRecorder(incidentLines, ledger, shareState, options.incidents, {
          onKept: (entry) => warn?.(`incident kept: run ${entry.run} (${entry.why.join(', ')}) → ${entry.incident}`),
          onError: (error) => warn?.(`an incident could not be kept: ${(error as Error).message}`),
        })
      : null
  const { handler: adminRequests, dashboard } = adminHandler({ storm, token, allowedHosts, ledger, state: shareState, dashboard: options.dashboard !== false, routes: [...(incidents ? [incidentRoutes(incidents)] : []), ...(options.adminRoutes ?? [])] })
  admin.on('request', adminRequests)

  const { address, adminAddress, self: selfHost } = await listenPair(server, admin, host, options.port ?? 0, options.adminPort ?? 0).catch(async (error: unknown) => {
    if (ownsState) await shareState?.close()
    throw error
  })
  router.listening(selfHost, address.port, adminAddress.port)

  let state: ProxyState = 'listening'
  let closing: Promise<void> | null = null
  // reportEffect() in this process reports here unless told otherwise (toolstorm-effects.ts).
  const sidecar = { url: formatOrigin(host, adminAddress.port), token }
  effectsRegistry().sidecars.push(sidecar)
  const close = () => {
    closing ??= (async () => {
      state = 'closing'
      const registered = effectsRegistry().sidecars
      if (registered.includes(sidecar)) registered.splice(registered.indexOf(sidecar), 1)
      // Open event streams would hold the admin server open for the whole grace period.
      dashboard?.close()
      // What the source holds open (a recorded wait) ends now, not after the close grace.
      await source.close?.()
      // CONNECT tunnels are not the servers' sockets: the handler closes them with the servers.
      await closePair(server, admin, { close: () => connect?.close(), destroyAll: () => connect?.destroyAll() })
      // A cut model stream still read on for its usage (read-on.ts) ends first, within the close grace.
      let grace: NodeJS.Timeout | undefined
      await Promise.race([storm.settled(), new Promise((resolve) => (grace = setTimeout(resolve, CLOSE_GRACE_MS)))])
      clearTimeout(grace)
      await client.close().catch(() => undefined)
      state = 'closed'
      try {
        // Every exchange has ended: the cassette is complete (a write failure rejects close()); then every open run is decided.
        await recorder?.close()
        await incidents?.close()
      } finally {
        if (ownsState) await shareState?.close()
      }
    })()
    return closing
  }

  return {
    url: formatOrigin(host, address.port),
    adminUrl: formatOrigin(host, adminAddress.port),
    dashboardUrl: dashboard ? `${formatOrigin(host, adminAddress.port)}${DASHBOARD_PATH}/` : null,
    token,
    effectsEnv: { TOOLSTORM_SIDECAR: sidecar.url, TOOLSTORM_ADMIN_TOKEN: token },
    storm,
    mode: targets.length ? 'reverse' : 'forward',
    targets,
    server,
    get ca() {
      return ca
    },
    source,
    state: shareState,
    recorder,
    incidents,
    get readyState() {
      return state
    },
    close,
    [Symbol.asyncDispose]: close,
  }
}
