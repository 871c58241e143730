/**
 * The admin API: a separate loopback HTTP server with a plain JSON control plane.
 *
 * | method | path | what |
 * |---|---|---|
 * | GET | /healthz | liveness (no token needed) |
 * | GET | /report?run=ID | the run's report (empty for a run with no calls yet) |
 * | GET | /runs | run ids with call counts |
 * | GET | /rules | the rules in force |
 * | PUT | /rules | replace the rules live (validated; the old rules stay on error); answers the rules that can never fire as `warnings` |
 * | POST | /reset?run=ID | forget one run (or all) |
 * | POST | /effects | the tool side reports a commit `{name, key, call}` |
 * | POST | /clock/advance | advance a virtual clock `{seconds}` (virtual clock only) |
 *
 * Reports, runs, resets and effects go through the storm's run ledger (engine/ledger/): in memory
 * the storm's own; with a shared state store (`--state`) every replica's, and `PUT /rules` reaches
 * every replica (docs/scale-out.md).
 *
 * Per-run rules, the active run and contracts are in run-routes.ts (passed in as an extra route).
 *
 * Errors are `{"error":{"type":"admin_error","code","message","details"?}}` with the code's HTTP status (see docs/errors.md).
 */
import { runLinesOfLedger } from '../../report/run-lines.js'
import http from 'node:http'
import { errorBody } from '../../error-body.js'
import { AdminApiError, ToolstormError, ERROR_CODES } from '../../errors.js'
import { VirtualClock } from '../../engine/clock.js'
import { parseStrictJson, StrictJsonError } from '../../json/strict-json.js'
import { parseConfig, type Storm } from '../../engine/storm.js'
import { lintRules } from '../../lint/lint-rules.js'
import { parseDocument } from '../../io/read-input-file.js'
import { VERSION } from '../../version.js'
import { hasValidToken, isAllowedHost } from './admin-auth.js'
import { checkAdminQuery } from './admin-query.js'
import { shownConfig } from './shown-config.js'
import type { AllowedHosts } from '../allowed-hosts.js'
import type { RunLedger } from '../../engine/ledger/run-ledger.js'

/** Admin request bodies are small JSON documents. */
const MAX_ADMIN_BODY_BYTES = 1024 * 1024

export interface AdminContext {
  readonly storm: Storm
  readonly token: string
  /** Host names besides loopback that may address the admin server (the --host it listens on, --admin-allow-host). */
  readonly allowedHosts: AllowedHosts
  /** Extra routes (dashboard, events) handled before the built-in ones; return true when handled. */
  readonly extraRoutes?: Array<(req: http.IncomingMessage, res: http.ServerResponse, url: URL) => boolean | Promise<boolean>>
  /** Routes answered without the token (the dashboard's static page; never data). Host/Origin are still checked. */
  readonly publicRoutes?: Array<(req: http.IncomingMessage, res: http.ServerResponse, url: URL) => boolean | Promise<boolean>>
  /** Where runs are kept: reports, runs, resets, effects and rules go through it. Default: the storm's memory. */
  readonly ledger?: RunLedger
  /** Called when the rules change, so the proxy can apply side effects (none today). */
  onRulesChanged?(): void
}

export function sendJson(res: http.ServerResponse, status: number, value: unknown): void {
  const body = JSON.stringify(value)
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body), 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' })
  res.end(body)
}

export function sendError(res: http.ServerResponse, error: unknown): void {
  if (error instanceof ToolstormError) {
    // An oversized body may still be arriving: the connection ends with this answer.
    if (error.code === 'ERR_INPUT_TOO_LARGE') res.setHeader('connection', 'close')
    sendJson(res, ERROR_CODES[error.code].status, errorBody('admin_error', error.code, error.message, error.details?.split('\n')))
    return
  }
  sendJson(res, 500, errorBody('admin_error', 'ERR_INTERNAL', `Failed to handle the admin request: ${(error as Error)?.message ?? String(error)}`))
}

/**
 * Read a request body of at most `limit` bytes. A larger one is refused with `413` once the
 * client has sent it (its bytes are discarded as they come, up to `DISCARD_FACTOR` × the limit):
 * a server that closes while the client still sends makes the client see a reset, not the 413.
 */
export function readBody(req: http.IncomingMessage, limit = MAX_ADMIN_BODY_BYTES): Promise<string> {
  return readBodyBytes(req, limit).then((bytes) => bytes.toString('utf8'))
}

/** `readBody`, as bytes (a protobuf body is not text). */
export function readBodyBytes(req: http.IncomingMessage, limit = MAX_ADMIN_BODY_BYTES): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let size = 0
    const tooLarge = () => new AdminApiError('ERR_INPUT_TOO_LARGE', `Failed to read the admin request: the body exceeds ${limit} bytes.`)
    req.on('data', (chunk: Buffer) => {
      size += chunk.length
      if (size <= limit) return void chunks.push(chunk)
      chunks.length = 0
      // Past what an honest client sends: answer now, and the connection closes after the answer.
      if (size > limit * DISCARD_FACTOR) {
        req.removeAllListeners('data')
        req.pause()
        reject(tooLarge())
      }
    })
    req.on('end', () => (size > limit ? reject(tooLarge()) : resolve(Buffer.concat(chunks))))
    req.on('error', reject)
  })
}

/** How much of an oversized admin body is read (and dropped) before it is answered anyway. */
const DISCARD_FACTOR = 16

export function parseJsonBody(text: string, what: string): unknown {
  try {
    return parseStrictJson(text, { maxDepth: 64 })
  } catch (error) {
    const detail = error instanceof StrictJsonError ? `line ${error.line}, column ${error.column}: ${error.message}` : String(error)
    throw new AdminApiError('ERR_JSON_INVALID', `Failed to read ${what}: the body is not valid JSON (${detail}).`)
  }
}

export function createAdminHandler(context: AdminContext): http.RequestListener {
  const { storm } = context
  const ledger = context.ledger ?? storm.ledger
  /**
   * A commit that could not be recorded: contracts on effects must not pass without it. Counted in
   * the run of `call` (else in every run kept); the reason goes into reports, redacted as everything there is.
   */
  const refuseEffect = (error: unknown, call: string | undefined) => ledger.refuseEffect(storm.redactor.text(error instanceof ToolstormError ? error.message : String(error)), call).catch(() => {})
  /** `refuseEffect` for a report refused before its body was read: the call it names, if it can be read, says whose run. */
  const refuseEffectReport = async (req: http.IncomingMessage, error: unknown) => {
    const body = await readBody(req, 16 * 1024)
      .then((text) => parseStrictJson(text) as { call?: unknown } | null)
      .catch(() => undefined)
    await refuseEffect(error, typeof body?.call === 'string' ? body.call : undefined)
  }
  return (req, res) => {
    void (async () => {
      const url = new URL(req.url ?? '/', 'http://admin')
      // Before the Host check: a health probe (a kubelet's Host is the pod IP) must get through,
      // and /healthz holds nothing a DNS-rebinding page could use (no data, no action).
      if (req.method === 'GET' && url.pathname === '/healthz') return sendJson(res, 200, { ok: true, version: VERSION })
      const isEffect = req.method === 'POST' && url.pathname === '/effects'
      try {
        if (!isAllowedHost(req, context.allowedHosts)) {
          throw new AdminApiError('ERR_ADMIN_FORBIDDEN', 'Failed to use the admin API: the Host or Origin header names another site. Address the admin server by its loopback address, or allow the name with --admin-allow-host (TOOLSTORM_ADMIN_HOSTS).')
        }
        if (isEffect) checkAdminQuery(req.method, url)
      } catch (error) {
        // A tool server's effect report refused before it was read (a Host not allowed, a query) is
        // a commit missing from the evidence: counted as the refusals below are. Not a browser's
        // (it sends Origin with every POST): a web page must not be able to fail the contracts.
        if (isEffect && req.headers.origin === undefined) await refuseEffectReport(req, error)
        throw error
      }
      for (const route of context.publicRoutes ?? []) if (await route(req, res, url)) return
      // An effect report is allowed without the token when it names a live exchange: the
      // exchange id is an unguessable capability that only the forwarded request carried.
      if (!isEffect && !hasValidToken(req, url, context.token)) {
        throw new AdminApiError('ERR_ADMIN_UNAUTHORIZED', 'Failed to use the admin API: send the token printed at start as "Authorization: Bearer <token>".')
      }
      checkAdminQuery(req.method, url)
      for (const route of context.extraRoutes ?? []) if (await route(req, res, url)) return

      const run = url.searchParams.get('run') ?? undefined
      switch (`${req.method} ${url.pathname}`) {
        // A run nothing happened in yet (a test that made no call) has an empty report.
        case 'GET /report':
          // A cut model stream's tokens are final once the proxy read its upstream on (bounded).
          await storm.settled(run)
          return sendJson(res, 200, await ledger.report(run))
        case 'GET /runs':
          return sendJson(res, 200, { runs: await ledger.runs() })
        case 'GET /runs/lines':
          return sendJson(res, 200, await runLinesOfLedger(ledger))
        case 'GET /rules':
          return sendJson(res, 200, shownConfig(storm))
        case 'PUT /rules': {
          const text = await readBody(req)
          const type = req.headers['content-type'] ?? ''
          const document = /yaml/i.test(type) ? parseDocument(text, 'PUT /rules', { format: 'yaml' }) : parseJsonBody(text, 'PUT /rules')
          const config = parseConfig(document, 'PUT /rules', storm.faults)
          // Shared first: a replica never serves rules the others did not get.
          await ledger.publishRules(config)
          storm.setConfig(config)
          context.onRulesChanged?.()
          return sendJson(res, 200, { ok: true, rules: config.rules.length, warnings: lintRules(config, storm.plugins) })
        }
        case 'POST /reset':
          await ledger.reset(run)
          return sendJson(res, 200, { ok: true, reset: run ?? 'all' })
        case 'POST /effects': {
          let call: string | undefined
          try {
            const body = parseJsonBody(await readBody(req, 16 * 1024), 'POST /effects') as { name?: unknown; key?: unknown; call?: unknown }
            if (typeof body !== 'object' || body === null || typeof body.call !== 'string') {
              throw new AdminApiError('ERR_EFFECT_INVALID', 'Failed to record an effect: expected {"name": string, "key": string, "call": "<x-toolstorm-call value>"}.')
            }
            call = body.call
            // The exchange id is the capability; the token lets an effect name an exchange that ended.
            const effect = await ledger.effect(body.name, body.key, call, { trusted: hasValidToken(req, url, context.token) })
            return sendJson(res, 201, { ok: true, effect })
          } catch (error) {
            await refuseEffect(error, call)
            throw error
          }
        }
        case 'POST /clock/advance': {
          if (!(storm.clock instanceof VirtualClock)) throw new AdminApiError('ERR_STATE', 'Failed to advance the clock: this proxy runs on real time (start it with --clock virtual).')
          const body = parseJsonBody(await readBody(req), 'POST /clock/advance') as { seconds?: unknown }
          if (typeof body?.seconds !== 'number' || !Number.isFinite(body.seconds) || body.seconds < 0) throw new AdminApiError('ERR_CONFIG_INVALID', 'Failed to advance the clock: expected {"seconds": a finite nonnegative number}.')
          await storm.clock.sleep(body.seconds)
          return sendJson(res, 200, { now: storm.clock.now() })
        }
        default:
          throw new AdminApiError('ERR_ADMIN_NOT_FOUND', `Failed to use the admin API: no endpoint ${req.method} ${url.pathname}. See docs/admin-api.md.`)
      }
    })().catch((error: unknown) => {
      if (!res.headersSent) sendError(res, error)
      else res.destroy()
    })
  }
}
