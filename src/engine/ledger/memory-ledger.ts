/**
 * The storm's runs in memory, behind the storage port (run-ledger.ts): what a single proxy,
 * intercept() and MSW handlers keep. The decider (call-decider.ts, the storm's) decides rules,
 * routes and redaction; the ledger counts and stores: the runs with their ordinals, calls, effects,
 * claims and coverage, the exchanges that may still report effects, and the run each recent trace
 * went to. It never calls the storm. Every method is synchronous but the port's: `begin` is the
 * proxy's hot path.
 */
import { ClaimError, EffectError, ToolstormError } from '../../errors.js'
import { roundSeconds, type Clock } from '../clock.js'
import type { CallDecider } from '../call-decider.js'
import { channels } from '../evidence/channels.js'
import type { Exchange, ExchangeEntry } from '../exchange.js'
import { selectRule } from '../rules/select.js'
import { DEFAULT_RUN, NO_RUN, Run } from '../run.js'
import type { SpanBatch, StoredClaim } from '../run-claims.js'
import { ITEMIZED_CALLS_LIMIT } from '../schema/config.js'
import type { CallRecord, EffectRecord, Report } from '../schema/report.js'
import type { FeedChanges, FeedCursor, FeedSnapshot } from './run-feed.js'
import { checkEffectInput, MAX_EFFECTS, type BeginRequest, type EffectOptions, type NewClaim, type RunLedger } from './run-ledger.js'

/** Runs kept at most by default (`maxRuns`, `--max-runs`): past it the oldest is evicted. */
export const DEFAULT_MAX_RUNS = 1000
/** Ids of evicted runs remembered, so a question about one says it was evicted. */
const EVICTED_REMEMBERED = 100_000
/** Exchanges remembered for late effect reports: those of the last 4096 calls begun. */
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

export class MemoryLedger implements RunLedger {
  readonly #decider: CallDecider
  readonly pollMs = FEED_POLL_MS
  readonly #runs = new Map<string, Run>()
  /** Recent calls' exchanges and ids, by sequence number: two stores per call, not a Map's insert and delete (at c=1 0.6 → 0.3 µs). */
  readonly #ring: Array<ExchangeEntry | undefined> = new Array(MAX_REMEMBERED_EXCHANGES)
  readonly #ringIds: Array<string | undefined> = new Array(MAX_REMEMBERED_EXCHANGES)
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

  constructor(decider: CallDecider) {
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
      for (let slot = 0; slot < MAX_REMEMBERED_EXCHANGES; slot++) if (this.#ring[slot]?.run === run) this.#ring[slot] = this.#ringIds[slot] = undefined
      this.#runs.delete(runId)
      if (channels.runReset.hasSubscribers) channels.runReset.publish({ run: runId })
    }
  }

  /** Keep the exchange of call `seq` (its plan's) for late effect reports and as a parent of calls made under it; it overwrites the call 4096 before. */
  remember(seq: number, id: string, entry: ExchangeEntry): void {
    const slot = seq % MAX_REMEMBERED_EXCHANGES
    this.#ring[slot] = entry
    this.#ringIds[slot] = id
  }

  /** The exchange `id` names, while it is remembered (its whole id, random bits included, must match). */
  exchange(id: string): ExchangeEntry | undefined {
    const slot = this.#decider.sequenceOf(id) % MAX_REMEMBERED_EXCHANGES
    return slot >= 0 && this.#ringIds[slot] === id ? this.#ring[slot] : undefined
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

  #rememberTrace(traceId: string, run: string): void {
    if (this.#traceRuns.get(traceId) === run) return
    if (this.#traceRuns.size >= MAX_REMEMBERED_TRACES) this.#traceRuns.delete(this.#traceRuns.keys().next().value as string)
    this.#traceRuns.set(traceId, run)
  }

  // The storage port --------------------------------------------------------------------------

  /** Start an exchange: its plan (the decider's), then its run's budget, ordinal, key and rule, counted here under one synchronous step. */
  begin(request: BeginRequest): Exchange {
    const decider = this.#decider
    const plan = decider.plan(request)
    const run = this.run(plan.run)
    const { config, route } = plan
    const joined = plan.reading?.joins === undefined ? undefined : this.exchange(plan.reading.joins.exchange)
    if (joined?.record && joined.run === run && joined.done) {
      // A further round of a call that ended: the same call, decided as it was (no new ordinal, draw or budget).
      const { record } = joined
      const rule = record.fault === null ? null : (config.rules.find((candidate) => candidate.name === record.fault) ?? null)
      const exchange = decider.openExchange(run, { ...plan, route: record.route }, record.ordinal, record.key, rule, record.id, record.started, record.parent, undefined, record)
      this.remember(plan.seq, plan.id, exchange.entry)
      return exchange
    }
    if (config.maxCalls !== null && run.callCount >= config.maxCalls) {
      run.budgetRejections++
      return decider.refusedExchange(run, plan)
    }
    const { ordinal, key } = run.reserve(route, plan.key)
    const rule = config.rules.length ? selectRule(config.rules, run.coverage, config.seed, route, ordinal, key, plan.path) : null
    const parent = plan.parent ? this.exchange(plan.parent) : undefined
    const parentCall = parent && parent.run === run && parent.record && !parent.done ? parent.record.id : null
    const exchange = decider.openExchange(run, plan, ordinal, key, rule, run.callCount + 1, roundSeconds(decider.clock.now() - run.start), parentCall)
    const record = exchange.record as CallRecord
    if (record.trace) this.#rememberTrace(record.trace.traceId, run.id)
    if (run.calls.length < ITEMIZED_CALLS_LIMIT) run.calls.push(record)
    else run.droppedCalls++
    this.remember(plan.seq, plan.id, exchange.entry)
    return exchange
  }

  /** Give runs the rules now deciding them: `id`'s, or every run's but those with rules of their own (the storm's changed). */
  syncRules(id?: string): void {
    for (const run of id === undefined ? this.#runs.values() : [this.#runs.get(id)]) {
      if (!run || (id === undefined && this.#decider.hasRunConfig(run.id))) continue
      run.syncRules(this.#decider.configOf(run.id).rules)
      if (channels.runReset.hasSubscribers) channels.runReset.publish({ run: run.id })
    }
  }

  /** A detached report of a run, now (empty for a run not kept). */
  reportNow(id: string): Report {
    return this.#decider.reportOf(this.#runs.get(id) ?? new Run(id, this.#decider.clock.now(), this.#decider.configOf(id).rules), this.committingRoutes)
  }

  /** A run's claims judged as its report would hold them; undefined when it has none. */
  claimsOf(id: string): Report['claims'] {
    const run = this.#runs.get(id)
    return run?.claims.size ? structuredClone(this.#decider.judge(run.claims, run, this.committingRoutes)) : undefined
  }

  /** Record that the exchange `call` names committed `(name, key)` (checked by the caller): its identity of the raw pair, redacted values kept. */
  recordEffect(name: string, key: string, call: string): EffectRecord {
    const exchange = this.exchange(call)
    if (!exchange || !exchange.record) {
      throw new EffectError('ERR_EFFECT_INVALID', `Failed to record an effect: no exchange "${call.slice(0, 64)}" in this storm. Was the run reset, or did the request bypass toolstorm?`)
    }
    const run = exchange.run
    if (run.effects.length >= MAX_EFFECTS) throw new EffectError('ERR_EFFECT_LIMIT', `Failed to record an effect: the run already holds ${MAX_EFFECTS} effects.`)
    const redactor = this.#decider.redactor
    const safeName = redactor.text(name)
    const safeKey = redactor.text(key)
    const effect: EffectRecord = { name: safeName, key: safeKey, call: exchange.record.id, at: roundSeconds(this.#decider.clock.now() - run.start), identity: run.identityOf(name, key), redacted: safeName !== name || safeKey !== key }
    this.addEffect(run, exchange.record.route, effect)
    if (channels.commitReported.hasSubscribers) channels.commitReported.publish({ run: run.id, exchangeId: call, effect })
    return effect
  }

  async report(run?: string) {
    // An evicted run is not an empty one: say so.
    if (run !== undefined && this.#evicted.has(run)) throw new ToolstormError('ERR_RUN_EVICTED', `Failed to report run "${run}": it was evicted (this proxy keeps the last ${this.maxRuns} runs, --max-runs; ${this.evictedRuns} evicted so far). Its report is gone; raise --max-runs, or keep the runs that went wrong with --incidents.`)
    return this.reportNow(run ?? DEFAULT_RUN)
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
    if (!options.trusted && !this.exchange(call)) {
      throw new EffectError('ERR_EFFECT_INVALID', 'Failed to record an effect: the call id names no live exchange. Pass the x-toolstorm-call header of the request being served.')
    }
    checkEffectInput(name, key)
    return this.recordEffect(name, key as string, call)
  }

  async refuseEffect(reason: string, call?: string) {
    const owner = call === undefined ? undefined : this.exchange(call)?.run
    for (const run of owner ? [owner] : this.#runs.values()) run.refuseEffect(reason)
  }

  /** A claim's run (a direct one's or a span's): the run it names if known (a mistyped id cannot hide claims in a run nobody reports), else its trace's, else the unnamed run. */
  claimRun(named: string | undefined, traceId: string | null): string {
    return this.#decider.claimRun(named, (id) => this.#runs.has(id), traceId === null ? undefined : this.#traceRuns.get(traceId))
  }

  async addClaim(claim: NewClaim) {
    const run = this.run(this.claimRun(claim.run, claim.traceId))
    const { tool, toolCallId, status, source, traceId, spanId } = claim
    const stored = this.keepClaim(run, { tool, toolCallId, status, source, traceId, spanId, upTo: run.callCount, after: 0 })
    if (!stored) throw new ClaimError('ERR_CLAIM_LIMIT', `Failed to record a claim: run "${run.id}" already holds 10,000 claims.`)
    return { run: run.id, claim: stored }
  }

  async addSpans(named: string | undefined, traceId: string, batch: SpanBatch) {
    const run = this.run(this.claimRun(named, traceId))
    const held = run.claims
    held.spans.received += batch.received
    held.spans.ignored += batch.ignored
    for (const [span, parent] of batch.links) held.link(span, parent)
    let rejected = 0
    for (const { startMs, endMs, ...claim } of batch.claims) {
      if (this.keepClaim(run, { ...claim, ...spanWindow(run, this.#decider.clock, startMs, endMs) })) held.spans.claims++
      else rejected++
    }
    return { run: run.id, rejected }
  }

  async publishRules() {}

  // The feed port (the dashboard) -------------------------------------------------------------

  async feedSnapshot(id: string): Promise<FeedSnapshot> {
    const run = this.#runs.get(id)
    const report = this.reportNow(run ? id : NO_RUN)
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
      stats: run ? { calls: run.callCount, droppedCalls: run.droppedCalls, budgetRejections: run.budgetRejections, ...(run.refusedEffects ? { refusedEffects: { ...run.refusedEffects } } : {}) } : { calls: 0, droppedCalls: 0, budgetRejections: 0 },
      runCount: this.#runs.size,
      more: false,
      claims: this.claimsOf(id) ?? [],
    }
  }

  #mark(run: Run): string {
    let mark = this.#marks.get(run)
    if (mark === undefined) this.#marks.set(run, (mark = String(++this.#marked)))
    return mark
  }
}

/** Seconds of slack between the agent's span times and toolstorm's call times (one machine, two clocks). */
const CLOCK_SLACK_SECONDS = 0.05

/**
 * The calls a span's claim may speak for, by time: with real time, those that started while the
 * span was open; with a virtual clock (span times are real), every call made before it arrived.
 */
function spanWindow(run: Run, clock: Clock, startMs: number, endMs: number): { upTo: number; after: number } {
  if (clock.kind !== 'real' || !(endMs > 0) || !(startMs > 0)) return { upTo: run.callCount, after: 0 }
  // RealClock reads performance.now(): seconds since performance.timeOrigin.
  const toRun = (epochMs: number) => (epochMs - performance.timeOrigin) / 1000 - run.start
  const start = toRun(startMs) - CLOCK_SLACK_SECONDS
  const end = toRun(endMs) + CLOCK_SLACK_SECONDS
  let upTo = 0
  let after = 0
  for (const call of run.calls) {
    if (call.started <= end) upTo = call.id
    if (call.started < start) after = call.id
  }
  // Calls past the itemized limit are not listed: the span may speak for all of them.
  if (run.droppedCalls > 0 && upTo === run.calls.length) upTo = run.callCount
  return { upTo, after }
}
