/**
 * The replay server: serves a cassette's exchanges with no upstream. Clients address it as a
 * base URL (origin-form requests) or as an HTTP proxy (absolute-form requests, `HTTP_PROXY`).
 * Recorded faults replay as the same faults at the same position: a reset (or a lost response)
 * resets the connection, a 429 comes back with its `Retry-After`, a response that broke off
 * mid-body breaks off at the same byte.
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
import http, { STATUS_CODES } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import { randomBytes } from 'node:crypto'
import { Agent, type Dispatcher } from 'undici'
import { ConfigError } from '../errors.js'
import { runExchange } from '../engine/exchange-flow.js'
import type { CassetteExchange } from '../engine/schema/cassette.js'
import { createStorm, type Storm } from '../engine/storm.js'
import { writeLinesAtomic } from '../io/write-lines-atomic.js'
import { createAdminHandler, sendJson } from '../proxy/admin/admin-server.js'
import { resetOrDestroy } from '../proxy/reset-socket.js'
import { parseTargets, resolveTarget } from '../proxy/targets.js'
import { BodyCapture } from './body-capture.js'
import { createBufferedTransport } from './buffered-transport.js'
import type { Cassette } from './cassette.js'
import { createCassetteRecorder, type CassetteRecorder } from './cassette-recorder.js'
import { mergeSession, type SessionStep } from './merge-session.js'
import { replayReport, type ReplayReport } from './replay-report.js'
import { replayedResponse } from './replay-response.js'
import { ReplaySession, type ReplayOptions, type ReplayVerdict } from './replay-session.js'

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
}

export type ReplayServerState = 'listening' | 'closing' | 'closed'

export interface ReplayServer {
  readonly url: string
  readonly adminUrl: string
  readonly token: string
  readonly mode: ReplayServerMode
  readonly session: ReplaySession
  readonly readyState: ReplayServerState
  verdict(): ReplayVerdict
  report(): ReplayReport
  /** Stop serving; in `update` mode write the cassette. Resolves with the final verdict. */
  close(): Promise<ReplayVerdict>
  [Symbol.asyncDispose](): Promise<void>
}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '::1'])

/** Request bodies buffered to forward them (passthrough modes) at most; larger ones are refused. */
const MAX_FORWARDED_BODY = 256 * 1024 * 1024

function listen(server: http.Server, port: number, host: string): Promise<AddressInfo> {
  return new Promise((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, host, () => {
      server.off('error', reject)
      resolve(server.address() as AddressInfo)
    })
  })
}

function origin(host: string, port: number): string {
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}`
}

function onClientError(error: NodeJS.ErrnoException, socket: Socket): void {
  if (error.code === 'ECONNRESET' || !socket.writable) return void socket.destroy()
  const status = error.code === 'HPE_HEADER_OVERFLOW' ? 431 : 400
  socket.end(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nconnection: close\r\ncontent-length: 0\r\n\r\n`)
}

/** Read a request body: a bounded capture for matching, and every byte when it may be forwarded. */
function readRequest(req: http.IncomingMessage, limit: number, keepAll: boolean): Promise<{ capture: BodyCapture; all: Buffer | null; tooLarge: boolean }> {
  return new Promise((resolve, reject) => {
    const capture = new BodyCapture(limit)
    const chunks: Buffer[] = []
    let tooLarge = false
    req.on('data', (chunk: Buffer) => {
      capture.push(chunk)
      if (!keepAll || tooLarge) return
      if (capture.size > MAX_FORWARDED_BODY) {
        tooLarge = true
        chunks.length = 0
        return
      }
      chunks.push(chunk)
    })
    req.on('end', () => {
      capture.ended = true
      resolve({ capture, all: keepAll && !tooLarge ? Buffer.concat(chunks) : null, tooLarge })
    })
    req.on('error', reject)
  })
}

function sendProblem(res: http.ServerResponse, status: number, type: string, code: string, message: string): void {
  if (res.headersSent || res.destroyed) return
  const body = JSON.stringify({ error: { type, code, message: `[toolstorm] ${message}` } })
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) })
  res.end(body)
}

/** Play a recorded exchange to the client as it happened. */
function play(exchange: CassetteExchange, req: http.IncomingMessage, res: http.ServerResponse, held: Set<http.ServerResponse>): void {
  const socket = req.socket
  const response = exchange.response
  switch (exchange.outcome) {
    case 'reset':
      resetOrDestroy(socket)
      return
    case 'response': {
      const replayed = replayedResponse(response!, { complete: true, method: req.method ?? 'GET' })
      res.writeHead(replayed.status, replayed.headers)
      res.end(req.method === 'HEAD' ? undefined : replayed.body)
      return
    }
    case 'error':
    case 'cancelled': {
      if (response) {
        // The head and the bytes the client had, then what happened next.
        const replayed = replayedResponse(response, { complete: false, method: req.method ?? 'GET' })
        res.writeHead(replayed.status, replayed.headers)
        if (replayed.body.length) res.write(replayed.body)
      }
      if (exchange.outcome === 'error') {
        // Let the bytes leave before the reset.
        res.once('finish', () => resetOrDestroy(socket))
        if (res.writableLength === 0) setImmediate(() => resetOrDestroy(socket))
        return
      }
      // The client gave up waiting when this was recorded: leave it waiting again.
      held.add(res)
      res.once('close', () => held.delete(res))
      return
    }
  }
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
  const ownsDispatcher = forwarding && options.dispatcher === undefined
  const dispatcher = forwarding ? (options.dispatcher ?? new Agent({ keepAliveTimeout: 4_000 })) : null
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
  const held = new Set<http.ServerResponse>()
  const limit = cassette.header.bodyLimit

  const server = http.createServer({ maxHeaderSize: 16 * 1024, requestTimeout: 300_000, headersTimeout: 60_000, keepAliveTimeout: 5_000 })
  server.on('clientError', onClientError)
  let self = ''
  const ownPorts = new Set<string>()
  server.on('request', (req, res) => {
    // The position is claimed when the head arrives: concurrent requests keep their order.
    const ticket = session.begin()
    void (async () => {
      const { capture, all, tooLarge } = await readRequest(req, limit, forwarding)
      const rawUrl = req.url ?? '/'
      const decision = await session.decide(ticket, { method: req.method ?? 'GET', url: rawUrl, headers: req.headers, body: capture })
      if (decision.type === 'serve') {
        if (recorder) steps.push({ type: 'replayed', position: decision.position })
        return play(decision.exchange, req, res, held)
      }
      if (decision.type === 'refuse') return sendProblem(res, 409, 'cassette_mismatch', decision.error.code, decision.error.message)
      if (tooLarge) return sendProblem(res, 413, 'replay_error', 'ERR_INPUT_TOO_LARGE', `Failed to forward "${req.method} ${session.redactor.url(rawUrl)}": its body exceeds ${MAX_FORWARDED_BODY} bytes.`)
      // Passthrough: a real exchange through the storm (and the recorder in update mode).
      const absolute = /^https?:\/\//i.test(rawUrl)
      const resolution = absolute ? resolveTarget([], rawUrl, req.headers.host, self) : resolveTarget(targets, rawUrl, req.headers.host, self)
      // An absolute-form request naming the replay server itself would loop.
      if (absolute && resolution.ok && ownPorts.has(resolution.clientUrl.port) && LOOPBACK.has(resolution.clientUrl.hostname.replace(/^\[|\]$/g, ''))) {
        return sendProblem(res, 508, 'replay_error', 'ERR_UPSTREAM_UNREACHABLE', 'Refused to forward a request to the replay server itself.')
      }
      if (!resolution.ok) {
        const reason = targets.length === 0 ? 'it matches no recorded exchange and, without --target, only absolute-form (proxy) requests can be forwarded' : resolution.message
        return sendProblem(res, 502, 'replay_error', 'ERR_UPSTREAM_UNREACHABLE', `Failed to forward "${req.method} ${session.redactor.url(rawUrl)}": ${reason}.`)
      }
      const exchange = storm.begin({ method: req.method ?? 'GET', url: resolution.clientUrl, headers: req.headers })
      if (recorder) steps.push({ type: 'recorded' })
      await runExchange(exchange, createBufferedTransport(req, res, all, resolution.upstream, dispatcher as Dispatcher), recorder?.observer)
    })().catch((error: unknown) => {
      sendProblem(res, 500, 'replay_error', 'ERR_INTERNAL', `Failed to replay the request: ${(error as Error)?.message ?? String(error)}.`)
    })
  })

  const admin = http.createServer({ maxHeaderSize: 16 * 1024, requestTimeout: 60_000, headersTimeout: 30_000 })
  admin.on('clientError', onClientError)
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

  const address = await listen(server, options.port ?? 0, host)
  let adminAddress: AddressInfo
  try {
    adminAddress = await listen(admin, options.adminPort ?? 0, host)
  } catch (error) {
    server.close()
    throw error
  }
  self = `${host.includes(':') ? `[${host}]` : host}:${address.port}`
  ownPorts.add(String(address.port))
  ownPorts.add(String(adminAddress.port))

  let state: ReplayServerState = 'listening'
  let closing: Promise<ReplayVerdict> | null = null
  const close = () => {
    closing ??= (async () => {
      state = 'closing'
      for (const res of held) res.destroy()
      const stopped = Promise.all([new Promise<void>((resolve) => server.close(() => resolve())), new Promise<void>((resolve) => admin.close(() => resolve()))])
      server.closeIdleConnections()
      admin.closeIdleConnections()
      const grace = setTimeout(() => {
        server.closeAllConnections()
        admin.closeAllConnections()
      }, 2_000)
      grace.unref()
      await stopped
      clearTimeout(grace)
      if (ownsDispatcher) await dispatcher?.close().catch(() => undefined)
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
    url: origin(host, address.port),
    adminUrl: origin(host, adminAddress.port),
    token,
    mode,
    session,
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

