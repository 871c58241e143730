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
 */
import http from 'node:http'
import https from 'node:https'

/** The header every forwarded request carries: its exchange id (`HEADER_CALL` of `toolstorm`; this file imports nothing, so it is spelled here). */
export const HEADER_CALL = 'x-toolstorm-call'
/** @deprecated Renamed `HEADER_CALL`, as the root export names it (CHANGELOG.md 0.2.0). */
export const CALL_HEADER = HEADER_CALL

type HeaderBag = Record<string, string | string[] | undefined> | { get(name: string): string | null }

export interface EffectsOptions {
  /** Base URL of the proxy's admin server. */
  sidecarUrl?: string
  /** Give up on one report after this long. */
  timeoutMs?: number
  /** Admin token (optional). */
  token?: string
  /** Where the one-time warning goes (default: process.emitWarning). */
  warn?: (message: string) => void
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

function callIdOf(source: { headers?: HeaderBag } | HeaderBag | string | null | undefined): string | undefined {
  if (typeof source === 'string') return source || undefined
  if (!source) return undefined
  const headers = ('headers' in source && source.headers ? source.headers : source) as HeaderBag
  if (typeof (headers as { get?: unknown }).get === 'function') return (headers as { get(name: string): string | null }).get(HEADER_CALL) ?? undefined
  const value = (headers as Record<string, string | string[] | undefined>)[HEADER_CALL]
  return Array.isArray(value) ? value[0] : value
}

export class ToolstormEffects {
  readonly #sidecarUrl: string | undefined
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
    this.#timeoutMs = options.timeoutMs ?? 1000
    this.#token = options.token
    this.#warn = options.warn ?? ((message) => process.emitWarning(message, { type: 'ToolstormWarning' }))
  }

  /**
   * Report that the request being served committed the logical effect `(name, key)`.
   * Resolves `true` once it is on record, `false` when skipped or dropped. Never rejects.
   */
  report(request: { headers?: HeaderBag } | HeaderBag | string | null | undefined, name: string, key: string): Promise<boolean> {
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
    const pending = this.#post(JSON.stringify({ name: String(name), key: String(key), call })).then(
      (ok) => {
        if (ok) this.#stats.sent++
        else this.#stats.dropped++
        return ok
      },
    )
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

  /** The sidecar a report goes to now: passed, else TOOLSTORM_SIDECAR, else the newest proxy in this process. */
  #sidecar(): { url: URL; token: string | undefined } {
    const env = typeof process !== 'undefined' ? process.env : {}
    const token = this.#token ?? env.TOOLSTORM_ADMIN_TOKEN
    const named = this.#sidecarUrl ?? env.TOOLSTORM_SIDECAR
    if (named) return { url: new URL('/effects', named), token }
    const running = effectsRegistry().sidecars.at(-1)
    if (running) return { url: new URL('/effects', running.url), token: token ?? running.token }
    return { url: new URL('/effects', 'http://127.0.0.1:8788'), token }
  }

  #post(body: string): Promise<boolean> {
    return new Promise((resolve) => {
      const sidecar = this.#sidecar()
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
          this.#warn(`toolstorm: could not report an effect to ${url.origin} (${problem}); further failures are counted in stats() silently.`)
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
export function reportEffect(request: { headers?: HeaderBag } | HeaderBag | string | null | undefined, name: string, key: string): Promise<boolean> {
  return sharedEffects().report(request, name, key)
}

/** What `reportEffect` sent, dropped, skipped, and has pending (as the Python helper's `stats()`). */
export function stats(): EffectsStats {
  return sharedEffects().stats()
}

/** Wait until `reportEffect`'s pending reports settle, at most `timeoutMs` (as the Python helper's `flush()`). */
export function flush(timeoutMs?: number): Promise<void> {
  return sharedEffects().flush(timeoutMs)
}
