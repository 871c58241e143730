/**
 * The pluggable fault unit. One kind per file, registered by its stable `type` in `registry.ts`.
 *
 * A fault declares its phase; the engine decides when each phase runs:
 * - `before-upstream`: the upstream has not seen the request (timeout, rate limit, outage, reset,
 *   replace, latency).
 * - `after-commit`: the upstream received the request and answered; its work is done
 *   (lost response).
 * - `on-response`: the real upstream response is being relayed and can be changed
 *   (schema drift).
 * A fault never picks its calls (selection is in `rules/select.ts`) and never draws random
 * numbers of its own: derived choices hash the seed (`decision.ts`).
 */
import type { z } from 'zod'
import type { Clock } from '../clock.js'
import type { StreamTransform } from '../streams/stream-transform.js'
import type { BaseRule } from '../schema/rule-base.js'
import type { RequestView, ResponseView } from '../http.js'
import type { ProtocolHooks } from '../protocol-hooks.js'

/** The run a call belongs to, for faults that keep a budget per run (`token_limit`). */
export interface RunView {
  /** Stable for the run's life, new when the run is forgotten: key per-run state on it (a WeakMap). */
  readonly identity: object
  /** Seconds since the run started, on the storm's clock. */
  readonly elapsed: number
  /** The call's record, kept current as the call goes on (its model usage included). */
  readonly record: CallUsageView | null
  /** With `--state`: the shared store's verdict on a `token_limit` call, taken when the call began. */
  readonly quota?: QuotaVerdict | undefined
}

/** A `token_limit` window's usage (`src/model-calls/faults/token-window.ts`). */
export interface WindowUsage {
  /** Calls let through in this window (the requests the provider served). */
  readonly requests: number
  /** Input plus output tokens those calls reported so far (in memory a call still streaming counts what arrived; in Redis a call counts once it finished). */
  readonly tokens: number
  /** Seconds until the window ends and the budget is whole again. */
  readonly resetSeconds: number
}

/**
 * A window's verdict on one call: whether it lets the call through, and its usage before the call
 * (what the 429's remaining/reset headers report). Taken in memory (`src/model-calls/faults/token-window.ts`) or, with
 * `--state`, in Redis (`src/state/redis-token-quota.ts`) when the call began.
 */
export interface QuotaVerdict {
  readonly admitted: boolean
  /** The window's number since the run started (0: the first minute). */
  readonly window: number
  readonly usage: WindowUsage
}

/**
 * What a fault reads of its call's record: the model usage, kept current as the call goes on.
 * Structural, so faults do not import the report schema (which imports the rules, and so the faults).
 */
export interface CallUsageView {
  readonly model?: { readonly inputTokens?: number | null; readonly outputTokens?: number | null } | null
}

export type FaultPhase = 'before-upstream' | 'after-commit' | 'on-response'

export interface FaultContext<R extends BaseRule = BaseRule> {
  readonly rule: R
  readonly seed: number
  readonly route: string
  /** The raw (unredacted) invocation key. */
  readonly key: string
  readonly clock: Clock
  /** Aborts when the client goes away. */
  readonly signal: AbortSignal
  readonly request: RequestView
  readonly response?: ResponseView
  /** Absent where no run is known (a fault applied outside the exchange flow). */
  readonly run?: RunView
  /**
   * What the storm's plug-ins know of the request's protocol (protocol-hooks.ts): a service's own
   * answer for a status fault (`shapeFailure`), a `replace` answer in its shape (`shapeResult`), where
   * an answer's payload is (`editAnswer`), a model stream's deltas (`readDelta`) and final event
   * (`isFinalEvent`). A hook no plug-in answers is absent: the fault's generic behaviour.
   */
  readonly protocol: ProtocolHooks
}

/** What the transport must do. Plain data, carried out by `proxy/` and `interceptors/`. */
export type FaultAction =
  | {
      readonly type: 'respond'
      readonly status: number
      readonly headers: Record<string, string>
      readonly body: Uint8Array | null
    }
  /** The client sees a connection reset (a TCP RST on sockets). */
  | { readonly type: 'reset' }
  /** Carry on unchanged: forward the request, or relay the response as it is. */
  | { readonly type: 'pass' }
  /**
   * Relay the upstream body through `transform`, chunk by chunk (on-response stream faults).
   * The transform decides what the client gets and when; `streams/stream-relay.ts` drives it.
   */
  | { readonly type: 'stream'; readonly transform: StreamTransform }

export interface FaultOutcome {
  readonly action: FaultAction
  /** Whether the fault actually happened (counts as `triggered` in coverage). */
  readonly injected: boolean
  /** Advertised retry delay in seconds, when the action tells the client when to retry. */
  readonly retryAfter?: number
}

export interface Fault<K extends string = string, R extends BaseRule = BaseRule> {
  /** The id used in rule files. Never renamed once released. */
  readonly type: K
  readonly phase: FaultPhase
  /** Extra rule fields this kind accepts, merged into the rule schema. */
  readonly params: z.ZodRawShape
  /** Whether the fault needs the upstream body decoded (the forwarded request then asks for identity encoding). */
  readonly needsBody?: boolean
  /** One human phrase, used in logs, reports and errors. */
  explain(rule: R): string
  apply(ctx: FaultContext<R>): Promise<FaultOutcome>
}

/** Define a fault with its rule type inferred. */
export function defineFault<K extends string, R extends BaseRule>(fault: Fault<K, R>): Fault<K, R> {
  return fault
}

/** JSON bytes with the headers a JSON response needs. */
export function jsonBody(value: unknown): { headers: Record<string, string>; body: Uint8Array } {
  return {
    headers: { 'content-type': 'application/json' },
    body: new TextEncoder().encode(JSON.stringify(value)),
  }
}
