/**
 * toolstorm effects helper for tool servers: report each commit to the proxy's sidecar.
 *
 * One self-contained file with no dependencies (copy it into any Node ≥ 18 project, or import
 * `toolstorm/effects`). It is fail-open, as good observability SDKs are:
 * - a request without `x-toolstorm-call` (production traffic) is ignored at once;
 * - when the sidecar is unreachable it warns once, never throws into your code, and gives up
 *   after a short timeout (1 s by default);
 * - `stats()` counts what was sent, dropped and skipped; `flush()` waits for pending reports
 *   (module functions for `reportEffect`, methods on a `ToolstormEffects` of your own).
 *
 * Await `reportEffect` at the commit point, before sending your response: the effect is then on
 * record before your response reaches the proxy.
 *
 * @example
 * import { reportEffect } from 'toolstorm/effects'
 * app.post('/shipments', async (req, res) => {
 *   const shipment = await db.createShipment(req.body)
 *   await reportEffect(req, 'shipment', req.body.order_id)
 *   res.status(201).json(shipment)
 * })
 *
 * One call for every mode, resolved when a report is sent (not when the helper is made):
 * 1. a storm in this process (`intercept()`, the vitest fixture) that knows the request's call
 *    records it directly (`storm.effect()`), with no HTTP;
 * 2. otherwise it is posted to the sidecar: `sidecarUrl`, else TOOLSTORM_SIDECAR as it is now, else
 *    the newest `startProxy()` running in this process (its admin URL and token), else
 *    http://127.0.0.1:8788. TOOLSTORM_ADMIN_TOKEN is optional: the call id is enough to report
 *    for that call. A proxy's `effectsEnv` holds both for a tool server in a child process.
 *
 * The agent's side reports claims the same way (`reportClaim`): what it concluded about a tool
 * call, held against the commits under it (docs/claims.md). A claim carries no sign of a test
 * (effects have the call header), so it is sent only when a sidecar is named (`sidecarUrl`,
 * TOOLSTORM_SIDECAR) or a proxy runs in this process; it needs the admin token, and goes to
 * `run`, else TOOLSTORM_RUN, else the proxy's active run.
 */
import http from 'node:http'
import https from 'node:https'

/** The header every forwarded request carries: its exchange id (`HEADER_CALL` of `toolstorm`; this file imports nothing, so it is spelled here). */
export const HEADER_CALL = 'x-toolstorm-call'
/** @deprecated Renamed `HEADER_CALL`, as the root export names it (CHANGELOG.md, Unreleased). */
export const CALL_HEADER = HEADER_CALL

type HeaderBag = Record<string, string | string[] | undefined> | { get(name: string): string | null }

export interface EffectsOptions {
  /** Base URL of the proxy's admin server. */
  sidecarUrl?: string
  /** Give up on one report after this long. */
  timeoutMs?: number
  /** Admin token (optional for effects; claims need it). */
  token?: string
  /** The run claims go to (default: TOOLSTORM_RUN, else the proxy's active run). */
  run?: string
  /** Where the one-time warning goes (default: process.emitWarning). */
  warn?: (message: string) => void
}

/**
 * What the agent concluded about one tool call (docs/claims.md): toolstorm holds it against the
 * effects the tool side committed under it.
 */
export interface Claim {
  /** The tool the agent called (`create_shipment`, or `POST /shipments`). */
  tool: string
  /** What the agent concluded: the call worked, or it did not. */
  status: 'success' | 'failure'
  /** The agent's id for the tool call, when it has one. */
  toolCallId?: string
  /** The run it belongs to (default: the helper's `run`, TOOLSTORM_RUN, else the active run). */
  run?: string
  /** The W3C `traceparent` the tool call's requests were sent under: joins the claim to exactly those calls. */
  traceparent?: string
}

export interface EffectsStats {
  sent: number
  dropped: number
  skipped: number
  pending: number
}

/** A storm in this process that records effects for the calls it knows (registered by `intercept()`). */
export interface InProcessEffectSink {
  /** `true` recorded, `false` refused (the effect limit), `null` not a call of this storm. */
  record(call: string, name: string, key: string): boolean | null
}

interface EffectsRegistry {
  readonly sinks: Set<InProcessEffectSink>
  /** Proxies running in this process (`startProxy()`), newest last. */
  readonly sidecars: Array<{ readonly url: string; readonly token: string }>
}

/**
 * Where in-process storms and proxies announce themselves to the helper. On globalThis under a
 * registered symbol, because this file imports nothing and may be loaded twice (a copy, or both
 * the ESM and CommonJS builds): every copy must find the same storms.
 */
export function effectsRegistry(): EffectsRegistry {
  const holder = globalThis as typeof globalThis & { [REGISTRY]?: EffectsRegistry }
  return (holder[REGISTRY] ??= { sinks: new Set(), sidecars: [] })
}
const REGISTRY = Symbol.for('toolstorm.effects.registry')

/**
 * The call id of what a tool server has at hand: a request (its headers), a header bag, the id
 * itself, or an MCP SDK handler's `extra`: over stdio the id travels in the request's
 * `params._meta` (`extra._meta`, or that `_meta` itself), over HTTP in the headers
 * (`extra.requestInfo`).
 */
function callIdOf(source: CallSource): string | undefined {
  if (typeof source === 'string') return source || undefined
  if (!source) return undefined
  const meta = (source as { _meta?: unknown })._meta
  if (meta !== null && typeof meta === 'object') {
    const value = (meta as Record<string, unknown>)[HEADER_CALL]
    if (typeof value === 'string' && value) return value
  }
  const info = (source as { requestInfo?: unknown }).requestInfo
  if (info !== null && typeof info === 'object' && 'headers' in info) return callIdOf(info as { headers?: HeaderBag })
  const headers = ('headers' in source && source.headers ? source.headers : source) as HeaderBag
  if (typeof (headers as { get?: unknown }).get === 'function') return (headers as { get(name: string): string | null }).get(HEADER_CALL) ?? undefined
  const value = (headers as Record<string, string | string[] | undefined>)[HEADER_CALL]
  return Array.isArray(value) ? value[0] : value
}

/** What `report` takes to find the call: see `callIdOf`. */
export type CallSource = { headers?: HeaderBag } | { _meta?: unknown } | { requestInfo?: unknown } | HeaderBag | string | null | undefined

interface Sidecar {
  readonly url: URL
  readonly token: string | undefined
}

export class ToolstormEffects {
  readonly #sidecarUrl: string | undefined
  readonly #run: string | undefined
  readonly #timeoutMs: number
  readonly #token: string | undefined
  readonly #warn: (message: string) => void
  #warned = false
  readonly #stats = { sent: 0, dropped: 0, skipped: 0 }
  readonly #pending = new Set<Promise<boolean>>()

  constructor(options: EffectsOptions = {}) {
    // Only what was passed is kept: the environment and the running proxies are read per report.
    if (options.sidecarUrl !== undefined) new URL('/effects', options.sidecarUrl)
    this.#sidecarUrl = options.sidecarUrl
    this.#run = options.run
    this.#timeoutMs = options.timeoutMs ?? 1000
    this.#token = options.token
    this.#warn = options.warn ?? ((message) => process.emitWarning(message, { type: 'ToolstormWarning' }))
  }

  /**
   * Report that the request being served committed the logical effect `(name, key)`.
   * Resolves `true` once it is on record, `false` when skipped or dropped. Never rejects.
   */
  report(request: CallSource, name: string, key: string): Promise<boolean> {
    const call = callIdOf(request)
    if (!call) {
      this.#stats.skipped++
      return Promise.resolve(false)
    }
    for (const sink of effectsRegistry().sinks) {
      let recorded: boolean | null
      try {
        recorded = sink.record(call, String(name), String(key))
      } catch {
        recorded = false
      }
      if (recorded === null) continue
      if (recorded) this.#stats.sent++
      else this.#stats.dropped++
      return Promise.resolve(recorded)
    }
    return this.#track(this.#post(this.#sidecar('/effects'), JSON.stringify({ name: String(name), key: String(key), call }), 'an effect'))
  }

  /**
   * Report what the agent concluded about a tool call (needs the admin token: `token`, or
   * TOOLSTORM_ADMIN_TOKEN). Skipped when no sidecar is named and no proxy runs in this process.
   * Resolves `true` once it is on record, `false` when skipped or dropped. Never rejects.
   */
  claim(claim: Claim): Promise<boolean> {
    const sidecar = this.#sidecar('/claims', false)
    if (!sidecar) {
      this.#stats.skipped++
      return Promise.resolve(false)
    }
    const run = claim.run ?? this.#run ?? ((typeof process !== 'undefined' ? process.env.TOOLSTORM_RUN : undefined) || undefined)
    let body: string
    try {
      body = JSON.stringify({
        tool: String(claim.tool),
        status: claim.status,
        ...(claim.toolCallId !== undefined ? { toolCallId: String(claim.toolCallId) } : {}),
        ...(run !== undefined ? { run } : {}),
        ...(claim.traceparent !== undefined ? { traceparent: String(claim.traceparent) } : {}),
      })
    } catch {
      // A claim whose fields cannot be serialized is dropped, never thrown into the agent.
      this.#stats.dropped++
      return Promise.resolve(false)
    }
    return this.#track(this.#post(sidecar, body, 'a claim'))
  }

  #track(sent: Promise<boolean>): Promise<boolean> {
    const pending = sent.then((ok) => {
      if (ok) this.#stats.sent++
      else this.#stats.dropped++
      return ok
    })
    this.#pending.add(pending)
    void pending.finally(() => this.#pending.delete(pending))
    return pending
  }

  /** Counts of reports sent, dropped (sidecar unreachable or refused), skipped (no call header), and pending. */
  stats(): EffectsStats {
    return { ...this.#stats, pending: this.#pending.size }
  }

  /** Wait until pending reports settle (at most `timeoutMs`). */
  async flush(timeoutMs = this.#timeoutMs * 2): Promise<void> {
    let timer: ReturnType<typeof setTimeout> | undefined
    await Promise.race([Promise.allSettled([...this.#pending]), new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)))])
    if (timer) clearTimeout(timer)
  }

  /**
   * The sidecar a report goes to now: passed, else TOOLSTORM_SIDECAR, else the newest proxy in this
   * process, else (when `fallback`) the default address; null when none and no fallback.
   */
  #sidecar(path: string, fallback?: true): Sidecar
  #sidecar(path: string, fallback: false): Sidecar | null
  #sidecar(path: string, fallback = true): Sidecar | null {
    const env = typeof process !== 'undefined' ? process.env : {}
    const token = this.#token ?? env.TOOLSTORM_ADMIN_TOKEN
    const named = this.#sidecarUrl ?? env.TOOLSTORM_SIDECAR
    if (named) return { url: new URL(path, named), token }
    const running = effectsRegistry().sidecars.at(-1)
    if (running) return { url: new URL(path, running.url), token: token ?? running.token }
    return fallback ? { url: new URL(path, 'http://127.0.0.1:8788'), token } : null
  }

  #post(sidecar: Sidecar, body: string, what: string): Promise<boolean> {
    return new Promise((resolve) => {
      const url = sidecar.url
      const transport = url.protocol === 'https:' ? https : http
      const headers: Record<string, string | number> = { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }
      if (sidecar.token) headers.authorization = `Bearer ${sidecar.token}`
      let settled = false
      const done = (ok: boolean, problem?: string) => {
        if (settled) return
        settled = true
        if (!ok && problem && !this.#warned) {
          this.#warned = true
          this.#warn(`toolstorm: could not report ${what} to ${url.origin} (${problem}); further failures are counted in stats() silently.`)
        }
        resolve(ok)
      }
      const req = transport.request(url, { method: 'POST', headers, timeout: this.#timeoutMs }, (res) => {
        res.resume()
        res.on('end', () => done(res.statusCode === 201, `HTTP ${res.statusCode}`))
        res.on('error', (error) => done(false, error.message))
      })
      req.on('timeout', () => {
        req.destroy()
        done(false, `no answer within ${this.#timeoutMs} ms`)
      })
      req.on('error', (error: NodeJS.ErrnoException) => done(false, error.code ?? error.message))
      req.end(body)
    })
  }
}

let shared: ToolstormEffects | undefined

/** The helper `reportEffect`, `stats` and `flush` share, configured from the environment on first use. */
function sharedEffects(): ToolstormEffects {
  shared ??= new ToolstormEffects()
  return shared
}

/** Report an effect with a shared helper configured from the environment. */
export function reportEffect(request: CallSource, name: string, key: string): Promise<boolean> {
  return sharedEffects().report(request, name, key)
}

/** Report a claim with the shared helper (as the Python helper's `report_claim()`); see `ToolstormEffects.claim`. */
export function reportClaim(claim: Claim): Promise<boolean> {
  return sharedEffects().claim(claim)
}

/** What `reportEffect` and `reportClaim` sent, dropped, skipped, and have pending (as the Python helper's `stats()`). */
export function stats(): EffectsStats {
  return sharedEffects().stats()
}

/** Wait until `reportEffect`'s pending reports settle, at most `timeoutMs` (as the Python helper's `flush()`). */
export function flush(timeoutMs?: number): Promise<void> {
  return sharedEffects().flush(timeoutMs)
}
