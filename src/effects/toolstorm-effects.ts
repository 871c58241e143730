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
 * The agent's side reports claims the same way (`reportClaim`): what it concluded about a tool
 * call, held against the commits under it (docs/claims.md).
 *
 * Environment: TOOLSTORM_SIDECAR (the proxy's admin URL, default http://127.0.0.1:8788; claims
 * are sent only when it, or `sidecarUrl`, is set), TOOLSTORM_ADMIN_TOKEN (optional for effects:
 * the call id is enough to report for that call; claims need it), TOOLSTORM_RUN (the run claims go to).
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

function callIdOf(source: { headers?: HeaderBag } | HeaderBag | string | null | undefined): string | undefined {
  if (typeof source === 'string') return source || undefined
  if (!source) return undefined
  const headers = ('headers' in source && source.headers ? source.headers : source) as HeaderBag
  if (typeof (headers as { get?: unknown }).get === 'function') return (headers as { get(name: string): string | null }).get(HEADER_CALL) ?? undefined
  const value = (headers as Record<string, string | string[] | undefined>)[HEADER_CALL]
  return Array.isArray(value) ? value[0] : value
}

export class ToolstormEffects {
  readonly #effectsUrl: URL
  /** Where claims go; null when no sidecar was named (no option, no TOOLSTORM_SIDECAR): claims are then skipped. */
  readonly #claimsUrl: URL | null
  readonly #run: string | undefined
  readonly #timeoutMs: number
  readonly #token: string | undefined
  readonly #warn: (message: string) => void
  #warned = false
  readonly #stats = { sent: 0, dropped: 0, skipped: 0 }
  readonly #pending = new Set<Promise<boolean>>()

  constructor(options: EffectsOptions = {}) {
    const env = typeof process !== 'undefined' ? process.env : {}
    this.#effectsUrl = new URL('/effects', options.sidecarUrl ?? env.TOOLSTORM_SIDECAR ?? 'http://127.0.0.1:8788')
    // An effect carries its own sign of a test (the call header); a claim does not, so an agent
    // in production, with no sidecar named, sends nothing at all.
    const named = options.sidecarUrl ?? env.TOOLSTORM_SIDECAR
    this.#claimsUrl = named ? new URL('/claims', named) : null
    this.#run = options.run ?? (env.TOOLSTORM_RUN || undefined)
    this.#timeoutMs = options.timeoutMs ?? 1000
    this.#token = options.token ?? env.TOOLSTORM_ADMIN_TOKEN
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
    return this.#track(this.#post(this.#effectsUrl, JSON.stringify({ name: String(name), key: String(key), call }), 'an effect'))
  }

  /**
   * Report what the agent concluded about a tool call (needs the admin token: `token`, or
   * TOOLSTORM_ADMIN_TOKEN). Skipped when no sidecar was named. Resolves `true` once it is on
   * record, `false` when skipped or dropped. Never rejects.
   */
  claim(claim: Claim): Promise<boolean> {
    if (!this.#claimsUrl) {
      this.#stats.skipped++
      return Promise.resolve(false)
    }
    const run = claim.run ?? this.#run
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
    return this.#track(this.#post(this.#claimsUrl, body, 'a claim'))
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

  #post(url: URL, body: string, what: string): Promise<boolean> {
    return new Promise((resolve) => {
      const transport = url.protocol === 'https:' ? https : http
      const headers: Record<string, string | number> = { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }
      if (this.#token) headers.authorization = `Bearer ${this.#token}`
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
export function reportEffect(request: { headers?: HeaderBag } | HeaderBag | string | null | undefined, name: string, key: string): Promise<boolean> {
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
