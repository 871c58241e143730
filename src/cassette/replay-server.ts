/**
 * The replay server: serves a cassette's exchanges with no upstream. Clients address it as a
 * base URL (origin-form requests) or as an HTTP proxy (absolute-form requests, `HTTP_PROXY`).
 * Recorded faults replay as the same faults at the same position: a reset (or a lost response)
 * resets the connection, a 429 comes back with its `Retry-After`, a response that broke off
 * mid-body breaks off at the same byte.
 *
 * In forward mode it also answers `CONNECT host:port` as the proxy does: TLS is terminated with a
 * leaf signed by the toolstorm CA, and the requests inside the tunnel are replayed like any other
 * (their URLs are `https://host:port/…`, as they were recorded).
 *
 * Modes: `replay` (default) never reaches the network. `passthrough-unmatched` forwards requests
 * that match nothing. `update` forwards them too and records them: `close()` then rewrites the
 * cassette as this session's traffic, in order.
 *
 * @example
 * const replay = await startReplayServer(await Cassette.load('incident.cassette.jsonl'))
 * // point the agent at replay.url …
 * const verdict = await replay.close() // verdict.passed, verdict.rows
 */
import http from 'node:http'
import type { Socket } from 'node:net'
import type { Duplex } from 'node:stream'
import { randomBytes } from 'node:crypto'
import type { Dispatcher } from 'undici'
import { errorBody, type ErrorBodyType } from '../error-body.js'
import { ConfigError, type ErrorCode } from '../errors.js'
import { runExchange } from '../engine/exchange-flow.js'
import type { CassetteExchange } from '../engine/schema/cassette.js'
import type { ResponseWriter } from '../engine/streams/response-writer.js'
import { createStorm, type Storm } from '../engine/storm.js'
import { writeLinesAtomic } from '../io/write-lines-atomic.js'
import { createAdminHandler, sendJson } from '../proxy/admin/admin-server.js'
import { answerClientError, createDataPlaneServer } from '../proxy/data-plane-server.js'
import type { WireRequest } from '../proxy/http1/wire-request.js'
import type { WireResponse } from '../proxy/http1/wire-response.js'
import { createProxyResponseWriter } from '../proxy/proxy-response-writer.js'
import { resetOrDestroy } from '../proxy/reset-socket.js'
import { createSelfCheck, selfLoopMessage } from '../proxy/self-address.js'
import { closePair, formatOrigin, listenPair, LOOPBACK } from '../proxy/server-pair.js'
import { parseTargets, resolveTarget, type Upstream } from '../proxy/targets.js'
import { createInMemoryCertificateAuthority, type CertificateAuthority } from '../proxy/tls/certificate-authority.js'
import { createConnectHandler, type ConnectHandler } from '../proxy/tls/connect-handler.js'
import { LeafCertificates } from '../proxy/tls/leaf-certificates.js'
import { upstreamConnectOptions, type UpstreamTlsOptions } from '../proxy/tls/upstream-tls.js'
import { createUpstreamClient, type UpstreamClient } from '../proxy/upstream-client.js'
import { createUpstreamFailures } from '../proxy/upstream-failures.js'
import { BodyCapture } from './body-capture.js'
import { createBufferedTransport } from './buffered-transport.js'
import type { Cassette } from './cassette.js'
import { createCassetteRecorder, type CassetteRecorder } from './cassette-recorder.js'
import { mergeSession, type SessionStep } from './merge-session.js'
import { replayReport, type ReplayReport } from './replay-report.js'
import { replayedResponse } from './replay-response.js'
import { ReplaySession, type ReplayOptions, type ReplayVerdict } from './replay-session.js'
import { replayEnding, replayPlan, untilDue, type ReplayEnding, type ReplaySpeed } from './replay-stream.js'

export type ReplayServerMode = 'replay' | 'update' | 'passthrough-unmatched'

export interface ReplayServerOptions extends ReplayOptions {
  mode?: ReplayServerMode
  /** Interface for both servers. Default 127.0.0.1. */
  host?: string
  /** Port (0 picks a free one). Default 0. */
  port?: number
  adminPort?: number
  adminToken?: string
  /** Where unmatched requests go in `update` and `passthrough-unmatched` modes (origin-form requests need one). */
  targets?: readonly string[]
  /** The storm unmatched requests run through (its rules apply to them). Default: no rules. */
  storm?: Storm
  /** `update` mode: the file the session's cassette is written to on close (default: the cassette's own file). */
  updateFile?: string
  dispatcher?: Dispatcher
  // HTTPS (docs/https.md) -------------------------------------------------------------------
  /**
   * The CA whose leaves clients see inside `CONNECT` tunnels (trust its `certificatePem`).
   * Default: a CA in this process's memory, made at start when the cassette holds an `https://`
   * exchange, else on the first CONNECT.
   */
  ca?: CertificateAuthority
  /** Ports CONNECT may reach besides 443 and the ports of the origins recorded in the cassette. */
  connectPorts?: readonly number[]
  /** A client refused the CA's leaf during the TLS handshake (it does not trust the CA). */
  onCertificateRefused?: (host: string, reason: string) => void
  /** Passthrough modes: extra CA certificates (PEM) trusted for upstream HTTPS. */
  upstreamCa?: UpstreamTlsOptions['upstreamCa']
  /** Passthrough modes: do not verify upstream certificates. Only for tests against self-signed upstreams. */
  insecureSkipUpstreamTlsVerification?: boolean
  /** Where problems worth a console line go: an unreachable upstream, once per origin and error code. Default: nowhere. */
  warn?: (message: string) => void
}

export type ReplayServerState = 'listening' | 'closing' | 'closed'

export interface ReplayServer {
  readonly url: string
  readonly adminUrl: string
  readonly token: string
  readonly mode: ReplayServerMode
  readonly session: ReplaySession
  /** The CA clients must trust to replay HTTPS through CONNECT (null until one is needed). */
  readonly ca: CertificateAuthority | null
  readonly readyState: ReplayServerState
  verdict(): ReplayVerdict
  report(): ReplayReport
  /** Stop serving; in `update` mode write the cassette. Resolves with the final verdict. */
  close(): Promise<ReplayVerdict>
  [Symbol.asyncDispose](): Promise<void>
}

/** Request bodies buffered to forward them (passthrough modes) at most; larger ones are refused. */
const MAX_FORWARDED_BODY = 256 * 1024 * 1024

/** Read a request body: a bounded capture for matching, and every byte when it may be forwarded. */
function readRequest(req: WireRequest, limit: number, keepAll: boolean): Promise<{ capture: BodyCapture; all: Buffer | null; tooLarge: boolean }> {
  return new Promise((resolve, reject) => {
    const capture = new BodyCapture(limit)
    const chunks: Buffer[] = []
    let tooLarge = false
    const body = req.body
    if (!body) {
      capture.ended = true
      return resolve({ capture, all: keepAll ? Buffer.alloc(0) : null, tooLarge })
    }
    body.on('data', (chunk: Buffer) => {
      capture.push(chunk)
      if (!keepAll || tooLarge) return
      if (capture.size > MAX_FORWARDED_BODY) {
        tooLarge = true
        chunks.length = 0
        return
      }
      chunks.push(chunk)
    })
    body.on('end', () => {
      capture.ended = true
      resolve({ capture, all: keepAll && !tooLarge ? Buffer.concat(chunks) : null, tooLarge })
    })
    body.on('error', reject)
  })
}

/** Whether the cassette holds absolute `https://` requests, and the ports of its recorded origins (CONNECT may reach them). */
function originsOf(cassette: Cassette): { https: boolean; ports: number[] } {
  const origins = new Set<string>()
  for (const exchange of cassette.exchanges) {
    const origin = /^https?:\/\/[^/?#]*/i.exec(exchange.request.url)?.[0]
    if (origin) origins.add(origin.toLowerCase())
  }
  const ports = new Set<number>()
  let https = false
  for (const origin of origins) {
    try {
      const url = new URL(origin)
      const secure = url.protocol === 'https:'
      https ||= secure
      ports.add(url.port ? Number(url.port) : secure ? 443 : 80)
    } catch {
      // Not a URL a client could send again.
    }
  }
  return { https, ports: [...ports] }
}

function sendProblem(res: WireResponse, status: number, type: ErrorBodyType, code: ErrorCode, message: string): void {
  if (res.headersSent || res.destroyed) return
  const body = JSON.stringify(errorBody(type, code, message))
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) })
  res.end(body)
}

/** Leave the client waiting, as it waited in vain when this was recorded. */
function hold(res: WireResponse, held: Set<WireResponse>): void {
  held.add(res)
  res.once('close', () => held.delete(res))
}

/** End the response as it ended when recorded. */
function finish(ending: ReplayEnding, writer: ResponseWriter, res: WireResponse, socket: Socket, held: Set<WireResponse>): void {
  switch (ending) {
    case 'end':
      writer.end()
      return
    case 'cut':
      // No terminal chunk follows: the client reads an incomplete body ("terminated" in fetch),
      // exactly as from the stream fault that was recorded.
      writer.abort()
      return
    case 'reset': {
      // Let the bytes leave before the reset.
      const reset = () => setImmediate(() => resetOrDestroy(socket))
      if (res.writableNeedDrain) res.once('drain', reset)
      else reset()
      return
    }
    case 'hold':
      hold(res, held)
      return
  }
}

/** Play a recorded exchange to the client as it happened. */
async function play(exchange: CassetteExchange, req: WireRequest, res: WireResponse, held: Set<WireResponse>, speed: ReplaySpeed): Promise<void> {
  const socket = req.socket
  const response = exchange.response
  const method = req.method
  if (exchange.outcome === 'reset') return resetOrDestroy(socket)
  const ending = replayEnding(exchange)
  // No head: the client saw the connection break, or waited in vain.
  if (response === null) return ending === 'hold' ? hold(res, held) : resetOrDestroy(socket)
  if (exchange.outcome === 'response' && !(response.stream && method !== 'HEAD')) {
    const replayed = replayedResponse(response, { complete: true, method })
    res.writeHead(replayed.status, replayed.headers)
    res.end(method === 'HEAD' ? undefined : replayed.body)
    return
  }
  // The head, the bytes the client had (event by event for a stream), then what happened next.
  const replayed = replayedResponse(response, { complete: false, method })
  const plan = replayPlan(exchange, response, method === 'HEAD' ? Buffer.alloc(0) : replayed.body, speed)
  const headers = { ...replayed.headers }
  // An event stream goes out piece by piece (chunked), as it was received.
  if (plan.streamed) delete headers['content-length']
  const gone = new AbortController()
  res.once('close', () => gone.abort())
  // The proxy's writer: the same backpressure and the same cut as a live stream fault.
  const writer = createProxyResponseWriter(res, socket, replayed.status, headers, gone.signal)
  const started = performance.now()
  try {
    for (const piece of plan.pieces) {
      await untilDue(started, piece.at, gone.signal)
      await writer.write(piece.bytes)
    }
  } catch {
    return // The client left.
  }
  // A stall that ended in a cut, or the gap before a dropped final event, lasts as long as it did.
  if (plan.ending !== 'hold') await untilDue(started, plan.end, gone.signal)
  if (gone.signal.aborted) return
  finish(plan.ending, writer, res, socket, held)
}

export async function startReplayServer(cassette: Cassette, options: ReplayServerOptions = {}): Promise<ReplayServer> {
  const mode = options.mode ?? 'replay'
  const host = options.host ?? '127.0.0.1'
  const forwarding = mode !== 'replay'
  const session = new ReplaySession(cassette, { ...options, passthroughUnmatched: forwarding, ...(mode === 'update' ? { allowUnused: true } : {}) })
  const targets = parseTargets(options.targets ?? [])
  const storm = options.storm ?? createStorm({ redact: { keys: cassette.header.redaction.keys } })
  const token = options.adminToken ?? randomBytes(24).toString('base64url')
  if (options.adminToken !== undefined && options.adminToken.length < 16) throw new ConfigError('Failed to start the replay server: --admin-token must be at least 16 characters.', { code: 'ERR_USAGE' })
  // Only the passthrough modes reach upstreams (building a context with extra roots costs ~100 ms).
  const upstreamTls = forwarding ? upstreamConnectOptions(options) : undefined
  if (upstreamTls && options.dispatcher !== undefined) throw new ConfigError('Failed to start the replay server: upstreamCa and insecureSkipUpstreamTlsVerification configure the replay server\'s own dispatcher. Set the TLS options on your dispatcher instead.', { code: 'ERR_USAGE' })
  const client = forwarding ? createUpstreamClient({ dispatcher: options.dispatcher, tls: upstreamTls }) : null
  const failures = forwarding ? createUpstreamFailures((url) => session.redactor.url(url), options.warn) : undefined
  const recordedOrigins = originsOf(cassette)
  let ca: CertificateAuthority | null = options.ca ?? (recordedOrigins.https ? await createInMemoryCertificateAuthority() : null)
  let recorder: CassetteRecorder | null = null
  if (mode === 'update') {
    recorder = createCassetteRecorder(storm, {
      source: 'proxy',
      urlForm: 'origin',
      targets: options.targets ?? [],
      bodyLimit: cassette.header.bodyLimit,
      match: session.matchOptions,
    })
  }
  // The session's traffic in order, for `update`: replayed positions and recorded requests.
  const steps: SessionStep[] = []
  const held = new Set<WireResponse>()
  const limit = cassette.header.bodyLimit

  const server = createDataPlaneServer()
  let self = ''
  const ownPorts = new Set<string>()
  const isSelf = createSelfCheck(host, ownPorts)
  /**
   * Every request, direct or from inside a CONNECT tunnel (then `tunnelled` names its upstream and
   * `rawUrl` is the absolute URL the client asked for), goes through here.
   */
  const handle = (req: WireRequest, res: WireResponse, rawUrl: string, tunnelled: { upstream: Upstream; clientUrl: URL } | null) => {
    // The position is claimed when the head arrives: concurrent requests keep their order.
    const ticket = session.begin()
    void (async () => {
      const { capture, all, tooLarge } = await readRequest(req, limit, forwarding)
      const decision = await session.decide(ticket, { method: req.method, url: rawUrl, headers: req.headers, body: capture })
      if (decision.type === 'serve') {
        if (recorder) steps.push({ type: 'replayed', position: decision.position })
        return play(decision.exchange, req, res, held, session.speed)
      }
      if (decision.type === 'refuse') return sendProblem(res, 409, 'cassette_mismatch', decision.error.code, decision.error.message)
      if (tooLarge) return sendProblem(res, 413, 'replay_error', 'ERR_INPUT_TOO_LARGE', `Failed to forward "${req.method} ${session.redactor.url(rawUrl)}": its body exceeds ${MAX_FORWARDED_BODY} bytes.`)
      // Passthrough: a real exchange through the storm (and the recorder in update mode).
      const absolute = /^https?:\/\//i.test(rawUrl)
      const resolution = tunnelled ? { ok: true as const, ...tunnelled } : absolute ? resolveTarget([], rawUrl, req.headers.host, self) : resolveTarget(targets, rawUrl, req.headers.host, self)
      // An absolute-form request naming the replay server itself would loop.
      if (absolute && resolution.ok && isSelf(resolution.clientUrl)) return sendProblem(res, 508, 'replay_error', 'ERR_REQUEST_UNROUTABLE', selfLoopMessage(resolution.clientUrl, 'replay server'))
      if (!resolution.ok) {
        const reason = targets.length === 0 ? 'it matches no recorded exchange and, without --target, only absolute-form (proxy) requests can be forwarded' : resolution.message
        return sendProblem(res, 502, 'replay_error', 'ERR_UPSTREAM_UNREACHABLE', `Failed to forward "${req.method} ${session.redactor.url(rawUrl)}": ${reason}.`)
      }
      const exchange = storm.begin({ method: req.method, url: resolution.clientUrl, headers: req.headers })
      if (recorder) steps.push({ type: 'recorded' })
      await runExchange(exchange, createBufferedTransport(req, res, all, resolution.upstream, client as UpstreamClient, failures), recorder?.observer)
    })().catch((error: unknown) => {
      sendProblem(res, 500, 'replay_error', 'ERR_INTERNAL', `Failed to replay the request: ${(error as Error)?.message ?? String(error)}.`)
    })
  }
  server.on('request', (req, res) => handle(req, res, req.url, null))

  // CONNECT: the proxy's own handler, with the replay as what serves each tunnelled request.
  let connect: ConnectHandler | null = null
  const connectHandler = async (): Promise<ConnectHandler> => {
    ca ??= await createInMemoryCertificateAuthority()
    connect ??= createConnectHandler({
      leaves: new LeafCertificates(ca),
      ownPorts,
      connectPorts: [...recordedOrigins.ports, ...(options.connectPorts ?? [])],
      serve: (req, res, upstream, clientUrl) => handle(req, res, clientUrl.href, { upstream, clientUrl }),
      ...(options.onCertificateRefused ? { onCertificateRefused: options.onCertificateRefused } : {}),
    })
    return connect
  }
  if (ca) await connectHandler()
  server.on('connect', (req: WireRequest, socket: Duplex, head: Buffer) => {
    if (connect) return connect.listener(req, socket, head)
    socket.on('error', () => undefined)
    connectHandler().then(
      // Made while closing: closePair did not know this handler, so the tunnel is refused here.
      (handler) => (state === 'listening' ? handler.listener(req, socket, head) : socket.destroy()),
      () => socket.destroy(),
    )
  })

  const admin = http.createServer({ maxHeaderSize: 16 * 1024, requestTimeout: 60_000, headersTimeout: 30_000 })
  admin.on('clientError', answerClientError)
  const reportMode = mode
  const replayRoutes = (req: http.IncomingMessage, res: http.ServerResponse, url: URL): boolean => {
    if (req.method !== 'GET') return false
    if (url.pathname === '/report') {
      sendJson(res, 200, replayReport(session, reportMode))
      return true
    }
    if (url.pathname === '/verdict') {
      const { passed, code, message, expected, served, unused } = session.verdict()
      sendJson(res, 200, { passed, code, message, expected, served, unused })
      return true
    }
    return false
  }
  admin.on('request', createAdminHandler({ storm, token, allowedHosts: new Set(LOOPBACK.has(host) ? [] : [host.toLowerCase()]), extraRoutes: [replayRoutes] }))

  const { address, adminAddress, self: selfHost } = await listenPair(server, admin, host, options.port ?? 0, options.adminPort ?? 0)
  self = selfHost
  ownPorts.add(String(address.port))
  ownPorts.add(String(adminAddress.port))

  let state: ReplayServerState = 'listening'
  let closing: Promise<ReplayVerdict> | null = null
  const close = () => {
    closing ??= (async () => {
      state = 'closing'
      for (const res of held) res.destroy()
      // The handler as it is when the grace ends: one made meanwhile (first CONNECT) is closed too.
      await closePair(server, admin, { close: () => connect?.close(), destroyAll: () => connect?.destroyAll() })
      await client?.close().catch(() => undefined)
      if (recorder) {
        await recorder.close()
        const recorded = await recorder.cassette()
        const file = options.updateFile ?? cassette.source
        const merged = mergeSession(cassette, recorded, steps)
        await writeLinesAtomic(file, merged.lines())
      }
      state = 'closed'
      return session.verdict()
    })()
    return closing
  }

  return {
    url: formatOrigin(host, address.port),
    adminUrl: formatOrigin(host, adminAddress.port),
    token,
    mode,
    session,
    get ca() {
      return ca
    },
    get readyState() {
      return state
    },
    verdict: () => session.verdict(),
    report: () => replayReport(session, reportMode),
    close,
    [Symbol.asyncDispose]: async () => {
      await close()
    },
  }
}

