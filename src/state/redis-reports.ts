/**
 * A run's merged report, and the dashboard's feed of it, from every replica: calls finished and
 * still running, effects, claims, the shared coverage and counters, assembled by the decider's
 * report helper as one process's are (docs/dashboard.md: with --state, every replica's exchanges).
 */
import type { CallDecider } from '../engine/call-decider.js'
import type { FeedChanges, FeedCursor } from '../engine/ledger/run-feed.js'
import { ITEMIZED_CALLS_LIMIT } from '../engine/schema/config.js'
import type { CallRecord, CoverageCounts, EffectRecord, Report } from '../engine/schema/report.js'
import type { RedisClaimLog } from './redis-claims.js'
import type { RedisRunRules } from './redis-run-rules.js'
import type { RedisStore } from './redis-store.js'

/** Stream entries one feed read returns at most (the rest come with the next read). */
const FEED_BATCH = 1000
/** Routes seen committing are a process's memory: a merged report weighs claims by the rules' `commits` globs alone. */
const NO_ROUTES: ReadonlySet<string> = new Set()

export class RedisReports {
  constructor(
    readonly store: RedisStore,
    readonly decider: CallDecider,
    readonly rules: RedisRunRules,
    readonly claims: RedisClaimLog,
    /** Exchanges this replica served without the store, per run, not yet counted there. */
    readonly unavailable: ReadonlyMap<string, number>,
  ) {}

  /** The merged report and where its streams end (the dashboard's feed reads on from there). */
  async read(runId: string): Promise<{ report: Report; cursor: FeedCursor; exists: boolean }> {
    const { store } = this
    const keys = store.runKeys(runId)
    // Running calls first: one that finishes meanwhile is then in both (the finished copy wins), never in neither.
    const [running, state, callEntries, effectEntries, rules] = await store.command(() =>
      Promise.all([store.client.hVals(keys.running), store.client.hGetAll(keys.state), store.client.xRange(keys.calls, '-', '+'), store.client.xRange(keys.effects, '-', '+'), store.client.hGetAll(keys.rules)]),
    )
    // The report shows the rules deciding the run, and their coverage, though another replica set them.
    this.rules.adopt(runId, rules)
    const claims = await this.claims.read(keys.claims, keys.spans)
    const counter = (field: string) => Number(state[field] ?? 0)
    const calls = (callEntries ?? []).map((entry) => JSON.parse(entry.message.c as string) as CallRecord)
    const finished = new Set(calls.map((call) => call.id))
    for (const text of running ?? []) {
      const call = this.#runningCall(runId, text)
      if (!finished.has(call.id)) calls.push(call)
    }
    calls.sort((a, b) => a.id - b.id)
    const effects = (effectEntries ?? []).map((entry) => JSON.parse(entry.message.e as string) as EffectRecord)
    const cursor = { calls: callEntries?.at(-1)?.id ?? '-', effects: effectEntries?.at(-1)?.id ?? '-', start: state.start ?? null }
    const report = this.decider.reportOf(
      {
        id: runId,
        coverage: this.#coverageOf(runId, counter),
        calls,
        effects,
        droppedCalls: Math.max(0, counter('calls') - ITEMIZED_CALLS_LIMIT),
        budgetRejections: counter('budget'),
        claims,
        refusedEffects: state.refused ? { count: counter('refused'), first: state.refusedFirst ?? '' } : null,
      },
      NO_ROUTES,
    )
    const missed = counter('unavailable') + (this.unavailable.get(runId) ?? 0)
    return { report: missed > 0 ? { ...report, stateUnavailable: missed } : report, cursor, exists: state.start !== undefined }
  }

  /**
   * What changed in a run since `cursor`, in one round trip: calls finished and effects reported
   * on any replica, the shared coverage and counters. `reset`: the run was reset (or expired)
   * since, so the follower needs a fresh snapshot.
   */
  async changes(runId: string, cursor: FeedCursor): Promise<FeedChanges> {
    const { store } = this
    const keys = store.runKeys(runId)
    const after = (id: string) => (id === '-' ? '-' : `(${id}`)
    const [state, callEntries, effectEntries, runCount, running, rules] = await store.command(() =>
      Promise.all([
        store.client.hGetAll(keys.state),
        store.client.xRange(keys.calls, after(cursor.calls), '+', { COUNT: FEED_BATCH }),
        store.client.xRange(keys.effects, after(cursor.effects), '+', { COUNT: FEED_BATCH }),
        store.client.zCard(store.runsKey),
        store.client.hVals(keys.running),
        store.client.hGetAll(keys.rules),
      ]),
    )
    this.rules.adopt(runId, rules)
    const counter = (field: string) => Number(state[field] ?? 0)
    const next = { calls: callEntries?.at(-1)?.id ?? cursor.calls, effects: effectEntries?.at(-1)?.id ?? cursor.effects, start: state.start ?? null }
    return {
      reset: next.start !== cursor.start,
      cursor: next,
      calls: (callEntries ?? []).map((entry) => JSON.parse(entry.message.c as string) as CallRecord),
      running: (running ?? []).map((text) => this.#runningCall(runId, text)),
      effects: (effectEntries ?? []).map((entry) => JSON.parse(entry.message.e as string) as EffectRecord),
      coverage: Object.fromEntries(this.#coverageOf(runId, counter)),
      stats: { calls: counter('calls'), droppedCalls: Math.max(0, counter('calls') - ITEMIZED_CALLS_LIMIT), budgetRejections: counter('budget'), ...(state.refused ? { refusedEffects: { count: counter('refused'), first: state.refusedFirst ?? '' } } : {}) },
      runCount: Number(runCount),
      more: (callEntries?.length ?? 0) >= FEED_BATCH || (effectEntries?.length ?? 0) >= FEED_BATCH,
    }
  }

  /** A call another replica (or this one) is still serving, as one process lists it. */
  #runningCall(run: string, text: string): CallRecord {
    const [id, route, ordinal, key, parent, startedMs, method, url, ruleName] = JSON.parse(text) as [number, string, number, string, number, number, string, string, string]
    const rule = ruleName ? (this.decider.configOf(run).rules.find((candidate) => candidate.name === ruleName) ?? null) : null
    return this.decider.runningRecord(id, route, ordinal, key, parent || null, method, url, startedMs / 1000, rule)
  }

  /** The shared coverage of the rules deciding `run` (its own, else the proxies'). */
  #coverageOf(run: string, counter: (field: string) => number): Map<string, CoverageCounts> {
    const coverage = new Map<string, CoverageCounts>()
    for (const rule of this.decider.configOf(run).rules) coverage.set(rule.name, { eligible: counter(`c:${rule.name}:e`), selected: counter(`c:${rule.name}:s`), triggered: counter(`c:${rule.name}:t`) })
    return coverage
  }
}
