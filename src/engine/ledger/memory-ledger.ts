/**
 * The storm's runs in memory, behind the storage port (run-ledger.ts): what a single proxy,
 * intercept() and MSW handlers keep. The storm decides (rules, ordinals, keys, redaction); the
 * ledger stores what it decided: the runs with their calls, effects, claims and coverage, the
 * exchanges that may still report effects, and the run each recent trace went to. Every method
 * the storm calls on it is synchronous: `begin` is the proxy's hot path.
 */
import { ClaimError, EffectError, ToolstormError } from '../../errors.js'
import { roundSeconds, type Clock } from '../clock.js'
import type { Exchange, ExchangeEntry } from '../exchange.js'
import { NO_RUN, Run } from '../run.js'
import type { StoredClaim } from '../run-claims.js'
import type { StormConfig } from '../schema/config.js'
import type { EffectRecord, Report } from '../schema/report.js'
import type { FeedChanges, FeedCursor, FeedSnapshot } from './run-feed.js'
import type { BeginRequest, EffectOptions, NewClaim, RunLedger } from './run-ledger.js'

/** Runs kept at most by default (`maxRuns`, `--max-runs`): past it the oldest is evicted. */
export const DEFAULT_MAX_RUNS = 1000
/** Ids of evicted runs remembered, so a question about one says it was evicted. */
const EVICTED_REMEMBERED = 100_000
/** Exchanges remembered for late effect reports; the oldest finished ones are forgotten first. */
const MAX_REMEMBERED_EXCHANGES = 4096
/** Trace ids remembered with the run their requests named (an OTLP span naming no run joins its trace's run). */
const MAX_REMEMBERED_TRACES = 4096
/** Routes remembered as committing (an effect was reported on them). */
const MAX_COMMITTING_ROUTES = 1000
/**
 * How often a dashboard follower reads a run kept in memory: calls and effects are announced on
 * the evidence channels; only refusals by the budget and claims come without an event.
 */
const FEED_POLL_MS = 1_000

/** What the ledger asks of the storm that decides (the storm itself: the ledger never imports it). */
export interface RunDecider {
  readonly clock: Clock
  configOf(id: string): StormConfig
  begin(request: BeginRequest): Exchange
  report(id?: string): Report
  claimsOf(id: string): Report['claims']
  effect(name: string, key: string, options: { call: string }): EffectRecord
  /** A run was forgotten (reset, or evicted as the oldest). */
  onForget(id: string): void
  /** Whether a run not kept is still known (rules of its own, or the active run): a claim naming it may create it. */
  knowsRun(id: string): boolean
  /** Where requests and claims that name no run go (the active run, else `default`). */
  unnamedRun(): string
}

export class MemoryLedger implements RunLedger {
  readonly #decider: RunDecider
  readonly pollMs = FEED_POLL_MS
  readonly keepsSpans = true
  readonly #runs = new Map<string, Run>()
  readonly #exchanges = new Map<string, ExchangeEntry>()
  readonly #recent: Array<string | undefined> = new Array(MAX_REMEMBERED_EXCHANGES)
  #remembered = 0
  /** The run each recent trace's requests went to, by trace id. */
  readonly #traceRuns = new Map<string, string>()
  /** Routes an effect was reported on, in any run: a claimed success on them with nothing committed is a phantom (docs/claims.md). */
  readonly committingRoutes = new Set<string>()
  /** Marks each run kept (a feed cursor's `start`): a run reset and begun again is another run. */
  readonly #marks = new WeakMap<Run, string>()
  #marked = 0
  /** Runs kept at most; past it the oldest is evicted (counted, and remembered by id). */
  maxRuns = DEFAULT_MAX_RUNS
  /** Runs evicted since start. */
  evictedRuns = 0
  readonly #evicted = new Set<string>()

  constructor(decider: RunDecider) {
    this.#decider = decider
  }

  // What the storm stores (synchronous) ------------------------------------------------------

  /** The run with this id, created on first use. */
  run(id: string): Run {
    let run = this.#runs.get(id)
    if (!run) {
      if (this.#runs.size >= this.maxRuns) this.#evict(this.#runs.keys().next().value as string)
      this.#evicted.delete(id)
      run = new Run(id, this.#decider.clock.now(), this.#decider.configOf(id).rules)
      this.#runs.set(id, run)
    }
    return run
  }

  #evict(id: string): void {
    this.forget(id)
    this.evictedRuns++
    this.#evicted.add(id)
    if (this.#evicted.size > EVICTED_REMEMBERED) this.#evicted.delete(this.#evicted.values().next().value as string)
  }

  /** Whether `id` was evicted (and has not begun again since). */
  wasEvicted(id: string): boolean {
    return this.#evicted.has(id)
  }

  /** The run with this id if it is kept. */
  find(id: string): Run | undefined {
    return this.#runs.get(id)
  }

  /** Ids of the runs kept, in the order they began. */
  ids(): string[] {
    return [...this.#runs.keys()]
  }

  /** The runs kept. */
  all(): IterableIterator<Run> {
    return this.#runs.values()
  }

  /** Forget a run (or every run) and the exchanges that could still report effects to it. */
  forget(id?: string): void {
    for (const runId of id === undefined ? [...this.#runs.keys()] : [id]) {
      const run = this.#runs.get(runId)
      if (!run) continue
      for (const [exchangeId, entry] of this.#exchanges) if (entry.run === run) this.#exchanges.delete(exchangeId)
      this.#runs.delete(runId)
      this.#decider.onForget(runId)
    }
  }

  /** Keep an exchange for late effect reports (and as a parent of calls made under it). */
  remember(id: string, entry: ExchangeEntry): void {
    this.#exchanges.set(id, entry)
    // A ring of the last ids: the one it overwrites is the oldest, forgotten in O(1).
    const slot = this.#remembered++ % MAX_REMEMBERED_EXCHANGES
    const oldest = this.#recent[slot]
    if (oldest !== undefined) this.#exchanges.delete(oldest)
    this.#recent[slot] = id
  }

  /** The exchange `id` names, while it is remembered. */
  exchange(id: string): ExchangeEntry | undefined {
    return this.#exchanges.get(id)
  }

  /** Keep a committed effect in its run; its route is then known to commit. */
  addEffect(run: Run, route: string, effect: EffectRecord): void {
    run.effects.push(effect)
    if (this.committingRoutes.size < MAX_COMMITTING_ROUTES) this.committingRoutes.add(route)
  }

  /** Keep a claim (already redacted) in `run`; null when the run already holds 10,000. */
  keepClaim(run: Run, claim: Omit<StoredClaim, 'id' | 'at'>): StoredClaim | null {
    return run.claims.add({ ...claim, at: roundSeconds(Math.max(0, this.#decider.clock.now() - run.start)) })
  }

  rememberTrace(traceId: string, run: string): void {
    if (this.#traceRuns.get(traceId) === run) return
    if (this.#traceRuns.size >= MAX_REMEMBERED_TRACES) this.#traceRuns.delete(this.#traceRuns.keys().next().value as string)
    this.#traceRuns.set(traceId, run)
  }

  /** The run whose requests carried `traceId` most recently, if it is still remembered. */
  #runOfTrace(traceId: string): string | undefined {
    return this.#traceRuns.get(traceId)
  }

  // The storage port --------------------------------------------------------------------------

  begin(request: BeginRequest) {
    return this.#decider.begin(request)
  }

  async report(run?: string) {
    // An evicted run is not an empty one: say so.
    if (run !== undefined && this.#evicted.has(run)) throw new ToolstormError('ERR_RUN_EVICTED', `Failed to report run "${run}": it was evicted (this proxy keeps the last ${this.maxRuns} runs, --max-runs; ${this.evictedRuns} evicted so far). Its report is gone; raise --max-runs, or keep the runs that went wrong with --incidents.`)
    return this.#decider.report(run)
  }

  async runIds() {
    return this.ids()
  }

  async runs() {
    // Calls started, itemized or not, as the shared store counts them.
    return [...this.#runs.values()].map((run) => ({ id: run.id, calls: run.callCount }))
  }

  async reset(run?: string) {
    this.forget(run)
  }

  async effect(name: unknown, key: unknown, call: string, options: EffectOptions = {}) {
    // The exchange id is the capability: only the forwarded request carried it.
    if (!options.trusted && !this.#exchanges.has(call)) {
      throw new EffectError('ERR_EFFECT_INVALID', 'Failed to record an effect: the call id names no live exchange. Pass the x-toolstorm-call header of the request being served.')
    }
    return this.#decider.effect(name as string, key as string, { call })
  }

  async refuseEffect(reason: string, call?: string) {
    const owner = call === undefined ? undefined : this.#exchanges.get(call)?.run
    for (const run of owner ? [owner] : this.#runs.values()) run.refuseEffect(reason)
  }

  /** A claim's run (a direct one's or a span's): the run it names if known (a mistyped id cannot hide claims in a run nobody reports), else its trace's, else the unnamed run. */
  claimRun(named: string | undefined, traceId: string | null): string {
    return (named !== undefined && (this.#runs.has(named) || this.#decider.knowsRun(named)) ? named : undefined) ?? (traceId !== null ? this.#runOfTrace(traceId) : undefined) ?? this.#decider.unnamedRun()
  }

  async addClaim(claim: NewClaim) {
    const run = this.run(this.claimRun(claim.run, claim.traceId))
    const { tool, toolCallId, status, source, traceId, spanId } = claim
    const stored = this.keepClaim(run, { tool, toolCallId, status, source, traceId, spanId, upTo: run.callCount, after: 0 })
    if (!stored) throw new ClaimError('ERR_CLAIM_LIMIT', `Failed to record a claim: run "${run.id}" already holds 10,000 claims.`)
    return { run: run.id, claim: stored }
  }

  async publishRules() {}

  // The feed port (the dashboard) -------------------------------------------------------------

  async feedSnapshot(id: string): Promise<FeedSnapshot> {
    const run = this.#runs.get(id)
    const report = this.#decider.report(run ? id : NO_RUN)
    return {
      exists: run !== undefined,
      report: run ? report : { ...report, run: id },
      runs: await this.runs(),
      cursor: { calls: '-', effects: String(run?.effects.length ?? 0), start: run ? this.#mark(run) : null },
    }
  }

  async feedChanges(id: string, cursor: FeedCursor): Promise<FeedChanges> {
    const run = this.#runs.get(id)
    const start = run ? this.#mark(run) : null
    // A run that began after the snapshot (start null then) is the run the follower asked for.
    if (start !== cursor.start && cursor.start !== null) {
      return { reset: true, cursor, calls: [], running: [], effects: [], coverage: {}, stats: { calls: 0, droppedCalls: 0, budgetRejections: 0 }, runCount: 0, more: false }
    }
    const read = cursor.start === null ? 0 : Number(cursor.effects)
    const effects = run ? run.effects.slice(read) : []
    return {
      reset: false,
      cursor: { calls: '-', effects: String(read + effects.length), start },
      // Calls this process serves reach the follower live (the evidence channels).
      calls: [],
      running: [],
      effects,
      coverage: run ? Object.fromEntries(run.coverage) : {},
      stats: run ? { calls: run.callCount, droppedCalls: run.droppedCalls, budgetRejections: run.budgetRejections } : { calls: 0, droppedCalls: 0, budgetRejections: 0 },
      runCount: this.#runs.size,
      more: false,
      claims: this.#decider.claimsOf(id) ?? [],
    }
  }

  #mark(run: Run): string {
    let mark = this.#marks.get(run)
    if (mark === undefined) this.#marks.set(run, (mark = String(++this.#marked)))
    return mark
  }
}
