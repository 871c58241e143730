/**
 * What the dashboard knows of the selected run, kept outside the component tree: snapshots
 * replace it, batches patch it. Components re-render at most once per animation frame and
 * every MIN_RENDER_INTERVAL_MS, however many events arrive, so a busy proxy never floods the page.
 */
import { contract, type ContractResult } from '../../src/contracts/contract.js'
import { recoveryOf } from '../../src/engine/recovery.js'
import type { CallRecord, CoverageCounts, EffectRecord, RecoveryRecord, Report } from '../../src/engine/schema/report.js'
import type { RunStats, RunSummary, StreamBatch, StreamSnapshot } from '../../src/proxy/admin/events.js'
import type { ReportClaim } from '../../src/engine/schema/claim-schema.js'
import { rejudgeClaims } from '../../src/claims/claim-verdict.js'
import { formatContradictedClaims } from '../../src/claims/contradicted-claims.js'

/** Rows kept in the page; later exchanges are counted, not listed. */
export const MAX_ROWS = 100_000

/**
 * Fewest milliseconds between two renders. The proxy sends up to ten batches a second; a log
 * view that updates about six times a second reads as live and leaves the machine to the
 * traffic (headless Chromium paints in software).
 */
const MIN_RENDER_INTERVAL_MS = 160

export type RowFilter = 'all' | 'faults' | 'errors'

export class RunStore {
  run = 'default'
  exists = false
  runs: readonly RunSummary[] = []
  /** Report fields other than calls, effects and claims (rules, seed, routes, budget). */
  meta: Omit<Report, 'calls' | 'effects' | 'coverage' | 'claims'> | null = null
  /** What the agent reported about its tool calls, as the proxy last judged them (docs/claims.md). */
  claims: readonly ReportClaim[] = []
  redaction = { keys: 0, secrets: 0 }
  /** Calls by id: index `id - 1`. */
  calls: Array<CallRecord | undefined> = []
  effects: EffectRecord[] = []
  effectsByCall = new Map<number, EffectRecord[]>()
  coverage: Record<string, CoverageCounts> = {}
  stats: RunStats = { calls: 0, droppedCalls: 0, budgetRejections: 0 }
  /** Calls beyond MAX_ROWS. */
  unlisted = 0
  faults = 0
  /** Bumped on every change. */
  version = 0
  #listeners = new Set<() => void>()
  #frame: number | null = null
  #lastRender = 0

  subscribe(listener: () => void): () => void {
    this.#listeners.add(listener)
    return () => this.#listeners.delete(listener)
  }

  applySnapshot(snapshot: StreamSnapshot): void {
    const { calls, effects, coverage, claims, ...meta } = snapshot.report
    this.claims = claims ?? []
    this.run = snapshot.run
    this.exists = snapshot.exists
    this.runs = snapshot.runs
    this.meta = meta
    this.redaction = snapshot.redaction
    this.calls = []
    this.effects = []
    this.effectsByCall = new Map()
    this.unlisted = 0
    this.faults = 0
    this.#addCalls(calls)
    this.#addEffects(effects)
    this.coverage = coverage
    this.stats = { calls: calls.length + meta.droppedCalls, droppedCalls: meta.droppedCalls, budgetRejections: meta.budgetRejections, ...(meta.refusedEffects ? { refusedEffects: meta.refusedEffects } : {}) }
    this.#changed()
  }

  applyBatch(batch: StreamBatch): void {
    if (batch.run !== this.run) return
    this.exists = this.exists || batch.calls.length > 0
    this.#addCalls(batch.calls)
    this.#addEffects(batch.effects)
    this.coverage = batch.coverage
    this.stats = batch.stats
    if (batch.runs) this.runs = batch.runs
    if (batch.claims) this.claims = batch.claims
    this.#changed()
  }

  /** Row ids (1-based call ids) that pass the filter, in call order. */
  rowIds(filter: RowFilter): number[] {
    const ids: number[] = []
    for (let index = 0; index < this.calls.length; index++) {
      const call = this.calls[index]
      if (filter === 'all' || (call && (filter === 'faults' ? call.injected : isError(call)))) ids.push(index + 1)
    }
    return ids
  }

  /** The run as a report, for the contract units (the same code `toolstorm check` runs). */
  report(): Report | null {
    if (!this.meta) return null
    const calls = this.calls.filter((call): call is CallRecord => call !== undefined)
    // Calls past the report's itemized limit reach the page through events; count each call once.
    return {
      ...this.meta,
      calls,
      effects: this.effects,
      coverage: this.coverage,
      droppedCalls: Math.max(0, this.stats.calls - calls.length),
      budgetRejections: this.stats.budgetRejections,
      // Refusals come with the counters: one after the snapshot fails the checks on effects live.
      ...(this.stats.refusedEffects ? { refusedEffects: this.stats.refusedEffects } : {}),
      ...(this.claims.length ? { claims: [...this.claims] } : {}),
    }
  }

  /**
   * Each call's claims with their verdicts judged again from the effects on the page (as the
   * contract judges them), so a verdict follows an effect that arrives after its claim.
   */
  claimsByCall(): Map<number, ReportClaim[]> {
    const byCall = new Map<number, ReportClaim[]>()
    for (const claim of rejudgeClaims({ claims: this.claims, effects: this.effects })) {
      for (const call of claim.calls) {
        const list = byCall.get(call)
        if (list) list.push(claim)
        else byCall.set(call, [claim])
      }
    }
    return byCall
  }

  /** One line per claim the effects contradict (tool, calls, effect keys), as `toolstorm check` lists them. */
  contradictedClaims(): string[] {
    return formatContradictedClaims({ claims: this.claims, effects: this.effects })
  }

  /** What recovering from each triggered fault cost, as the report's `recovery` (the same code). */
  recovery(): RecoveryRecord[] {
    return recoveryOf(this.calls.filter((call): call is CallRecord => call !== undefined))
  }

  contract(budget: number | null): ContractResult | null {
    const report = this.report()
    if (!report) return null
    const checks = contract(report).requireTriggered().noDuplicateEffects()
    if (budget !== null) checks.atMostCalls(budget)
    if (report.claims?.length) checks.claimsMatchEffects()
    return checks.toJSON()
  }

  #addCalls(calls: readonly CallRecord[]): void {
    for (const call of calls) {
      const index = call.id - 1
      if (index >= MAX_ROWS) {
        this.unlisted = Math.max(this.unlisted, call.id - MAX_ROWS)
        continue
      }
      const before = this.calls[index]
      if (before?.injected) this.faults--
      if (call.injected) this.faults++
      this.calls[index] = call
    }
  }

  #addEffects(effects: readonly EffectRecord[]): void {
    for (const effect of effects) {
      this.effects.push(effect)
      const list = this.effectsByCall.get(effect.call)
      if (list) list.push(effect)
      else this.effectsByCall.set(effect.call, [effect])
    }
  }

  #changed(): void {
    this.version++
    if (this.#frame !== null) return
    const wait = Math.max(0, this.#lastRender + MIN_RENDER_INTERVAL_MS - performance.now())
    this.#frame = -1
    setTimeout(() => {
      this.#frame = requestAnimationFrame(() => {
        this.#frame = null
        this.#lastRender = performance.now()
        for (const listener of this.#listeners) listener()
      })
    }, wait)
  }
}

export function isError(call: CallRecord): boolean {
  return call.outcome === 'reset' || call.outcome === 'error' || (call.status !== null && call.status >= 400)
}
