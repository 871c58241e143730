/**
 * The storage port: where a storm's runs are kept. In memory they are the storm's own
 * (memory-ledger.ts); with a shared store every replica's (Redis: src/state/redis-run-state.ts).
 * The admin API, the CLI and the report code read and change runs through this port and never
 * ask which store is in use.
 *
 * `begin` stays synchronous in memory: it is the proxy's hot path, and only a shared store pays
 * for an await.
 *
 * @see ../../../docs/scale-out.md
 */
import { EffectError } from '../../errors.js'
import type { Exchange } from '../exchange.js'
import type { StormConfig } from '../schema/config.js'
import type { EffectRecord, Report } from '../schema/report.js'
import type { HeaderMap } from '../http.js'
import type { RequestReading } from '../request-reading.js'
import type { SpanBatch, StoredClaim } from '../run-claims.js'
import type { RunFeed } from './run-feed.js'

/** Effects a run holds at most. */
export const MAX_EFFECTS = 10_000

/** Throws `ERR_EFFECT_INVALID` unless `name` and `key` are strings of 1–200 characters. */
export function checkEffectInput(name: unknown, key: unknown): asserts name is string {
  if (typeof name !== 'string' || typeof key !== 'string' || name.length < 1 || name.length > 200 || key.length < 1 || key.length > 200) {
    throw new EffectError('ERR_EFFECT_INVALID', 'Failed to record an effect: name and key must be strings of 1–200 characters.')
  }
}

export interface BeginRequest {
  readonly method: string
  /** The absolute URL the request goes to. */
  readonly url: URL
  readonly headers: HeaderMap
  /** Overrides the `x-toolstorm-run` header. */
  readonly run?: string
  /** What the plug-in that named the request read of it (`engine/serve.ts` asks them): its route, details and evidence. */
  readonly reading?: RequestReading | undefined
}

/** A claim to keep (docs/claims.md), already redacted: the store adds when it came and the calls it can speak for (the run's so far). */
export interface NewClaim extends Pick<StoredClaim, 'tool' | 'toolCallId' | 'status' | 'source' | 'traceId' | 'spanId'> {
  /** The run the claim names; a store may send it elsewhere (memory: a run it does not know). */
  readonly run?: string | undefined
}

export interface EffectOptions {
  /**
   * The caller holds the admin token. An effect that names no live exchange is then still taken
   * in memory (a report after its exchange ended); a shared store's exchange map decides alone.
   */
  readonly trusted?: boolean
}

/** Runs as one store keeps them; the dashboard follows a run through the feed half (run-feed.ts). */
export interface RunLedger extends RunFeed {
  /** Start an exchange: its run's budget, ordinal, key and rule, decided once for every replica. */
  begin(request: BeginRequest): Exchange | Promise<Exchange>
  /** The run's report (empty for a run with no calls yet). */
  report(run?: string): Promise<Report>
  /** The runs kept, in the order they began. */
  runIds(): Promise<string[]>
  /** Forget one run, or every run. */
  reset(run?: string): Promise<void>
  /** Record a committed effect for the exchange `call` names. */
  effect(name: unknown, key: unknown, call: string, options?: EffectOptions): Promise<EffectRecord>
  /**
   * Count an effect report that was refused (`reason`: the error's message): in the run of the
   * call it names, else in every run kept now (a stale, foreign or missing call id names none).
   */
  refuseEffect(reason: string, call?: string): Promise<void>
  /** Keep a claim in its run: the one it names, else its trace's, else the active run. Throws `ERR_CLAIM_LIMIT` when the run is full. */
  addClaim(claim: NewClaim): Promise<{ run: string; claim: StoredClaim }>
  /**
   * Keep what an OTLP export brought the run its spans name (`named`, else their trace's, else
   * the active run): the spans' counts and parent links, and their claims; how many claims were
   * refused (the run already held 10,000).
   */
  addSpans(named: string | undefined, traceId: string, batch: SpanBatch): Promise<{ run: string; rejected: number }>
  /** Give every replica `config` before this one serves it (nothing to do in memory). */
  publishRules(config: StormConfig): Promise<void>
}
