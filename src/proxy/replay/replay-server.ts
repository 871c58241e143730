/**
 * The replay server: the proxy with a cassette source (`replay-source.ts`), serving a cassette's
 * exchanges with no upstream. Clients address it as a base URL (origin-form requests) or as an
 * HTTP proxy (absolute-form requests, `HTTP_PROXY`). Rules, runs, redaction, the admin API and the
 * dashboard work as in the proxy, because it is the proxy; the admin API adds `/report` and `/verdict`.
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
import type { IncomingMessage, ServerResponse } from 'node:http'
import { createInMemoryCertificateAuthority, type CertificateAuthority } from '../tls/certificate-authority.js'
import { startProxy, type ProxyServer } from '../proxy-server.js'
import { sendJson } from '../admin/admin-server.js'
import { createStorm } from '../../create-storm.js'
import type { Cassette } from '../../cassette/format/cassette.js'
import { checkOptions } from '../../options/check-options.js'
import { replayServerOptionsSchema, type ReplayServerMode, type ReplayServerOptions } from './replay-server-options.js'
import { createCassetteRecorder, type CassetteRecorder } from '../../cassette/record/cassette-recorder.js'
import { mergeSession } from '../../cassette/replay/merge-session.js'
import { replayReport, type ReplayReport } from '../../cassette/replay/replay-report.js'
import type { ReplaySession } from '../../cassette/replay/replay-session.js'
import { formatReplayTable } from '../../cassette/replay/replay-table.js'
import type { ReplayVerdict } from '../../cassette/replay/replay-verdict.js'
import { replaySource, type ReplayMode } from '../../cassette/replay/replay-source.js'



export type ReplayServerState = 'listening' | 'closing' | 'closed'

export interface ReplayServer {
  readonly url: string
  readonly adminUrl: string
  readonly token: string
  readonly mode: ReplayServerMode
  readonly session: ReplaySession
  /** The CA clients must trust to replay HTTPS through CONNECT (null until one is needed, and with `targets`). */
  readonly ca: CertificateAuthority | null
  readonly readyState: ReplayServerState
  /** The proxy it runs on (its storm, dashboard, source). */
  readonly proxy: ProxyServer
  verdict(): ReplayVerdict
  report(): ReplayReport
  /** Stop serving; in `update` mode write the cassette. Resolves with the final verdict. */
  close(): Promise<ReplayVerdict>
  [Symbol.asyncDispose](): Promise<void>
}

/**
 * The admin routes a replay adds: `GET /report` (with no run) is the replay report, `GET /verdict`
 * the verdict so far, with its table as `toolstorm replay` prints it (the pytest plugin's failure
 * message). The replay server and `toolstorm mcp --replay` serve them.
 */
export function replayAdminRoute(session: ReplaySession, mode: ReplayServerMode | ReplayMode): (req: IncomingMessage, res: ServerResponse, url: URL) => boolean {
  return (req, res, url) => {
    if (req.method !== 'GET') return false
    // `/report?run=ID` is the run's report, as in the proxy (the dashboard exports it).
    if (url.pathname === '/report' && !url.searchParams.has('run')) {
      sendJson(res, 200, replayReport(session, mode))
      return true
    }
    if (url.pathname === '/verdict') {
      const { passed, code, message, expected, served, unused, truncated, rows } = session.verdict()
      sendJson(res, 200, { passed, code, message, expected, served, unused, truncated, rows, table: formatReplayTable(rows) })
      return true
    }
    return false
  }
}

function holdsHttps(cassette: Cassette): boolean {
  return cassette.exchanges.some((exchange) => /^https:\/\//i.test(exchange.request.url))
}

export async function startReplayServer(cassette: Cassette, options: ReplayServerOptions = {}): Promise<ReplayServer> {
  checkOptions('startReplayServer()', replayServerOptionsSchema, options)
  const mode = options.mode ?? 'replay'
  const forwarding = mode !== 'replay'
  const { mode: _mode, host: _host, port: _port, adminPort: _adminPort, adminToken: _token, adminAllowHosts: _adminHosts, allowHosts: _allowHosts, targets: _targets, storm: _storm, updateFile: _file, dispatcher: _dispatcher, ca: _ca, connectPorts: _ports, onCertificateRefused: _refused, upstreamCa: _upstreamCa, insecureSkipUpstreamTlsVerification: _insecure, warn: _warn, ...replayOptions } = options
  const source = replaySource(cassette, { ...replayOptions, mode })
  const session = source.session
  const storm = options.storm ?? createStorm({ redact: { keys: cassette.header.redaction.keys } })
  // `update`: every exchange is recorded; those the cassette answered are copied from it on close.
  const recorder: CassetteRecorder | null =
    mode === 'update'
      ? createCassetteRecorder(storm, { source: 'proxy', urlForm: 'origin', targets: options.targets ?? [], bodyLimit: cassette.header.bodyLimit, match: session.matchOptions })
      : null
  const replayRoutes = replayAdminRoute(session, mode)
  const proxy = await startProxy({
    source,
    storm,
    selfName: 'replay server',
    adminRoutes: [replayRoutes],
    // The storm's plug-ins, as every transport: a replayed model call has its model and tokens in the report too.
    ...(recorder ? { observer: recorder.observer } : {}),
    ...(options.host !== undefined ? { host: options.host } : {}),
    ...(options.port !== undefined ? { port: options.port } : {}),
    ...(options.adminPort !== undefined ? { adminPort: options.adminPort } : {}),
    ...(options.adminToken !== undefined ? { adminToken: options.adminToken } : {}),
    ...(options.adminAllowHosts ? { adminAllowHosts: options.adminAllowHosts } : {}),
    ...(options.allowHosts ? { allowHosts: options.allowHosts } : {}),
    ...(options.targets ? { targets: options.targets } : {}),
    ...(options.dispatcher ? { dispatcher: options.dispatcher } : {}),
    // Making a key takes up to a second: only at start when the cassette holds HTTPS exchanges.
    ca: options.ca ?? (holdsHttps(cassette) ? await createInMemoryCertificateAuthority() : createInMemoryCertificateAuthority),
    ...(options.connectPorts ? { connectPorts: options.connectPorts } : {}),
    ...(options.onCertificateRefused ? { onCertificateRefused: options.onCertificateRefused } : {}),
    // Only the passthrough modes reach upstreams (a context with extra roots costs ~100 ms to build).
    ...(forwarding && options.upstreamCa !== undefined ? { upstreamCa: options.upstreamCa } : {}),
    ...(forwarding && options.insecureSkipUpstreamTlsVerification ? { insecureSkipUpstreamTlsVerification: true } : {}),
    ...(options.warn ? { warn: options.warn } : {}),
  })

  let closing: Promise<ReplayVerdict> | null = null
  const close = () => {
    closing ??= (async () => {
      await proxy.close()
      if (recorder) {
        await recorder.close()
        const recorded = await recorder.cassette()
        const merged = mergeSession(cassette, recorded, source.steps)
        await merged.save(options.updateFile ?? cassette.source)
      }
      return session.verdict()
    })()
    return closing
  }

  return {
    url: proxy.url,
    adminUrl: proxy.adminUrl,
    token: proxy.token,
    mode,
    session,
    get ca() {
      return proxy.ca
    },
    proxy,
    get readyState() {
      return proxy.readyState
    },
    verdict: () => session.verdict(),
    report: () => replayReport(session, mode),
    close,
    [Symbol.asyncDispose]: async () => {
      await close()
    },
  }
}
