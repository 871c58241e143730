/**
 * The search (Filibuster's loop, SoCC 2021): breadth first, in waves. The first wave is one run
 * per single fault at each call site of the baseline; a route a run reaches that no run before
 * reached (a fallback path, taken only under that fault) makes a further wave: the fault that led
 * there plus each fault of the new route; with `--depth 2`, a last wave pairs each single fault
 * that passed with each fault at the call sites its run reached.
 *
 * Reduction: variations that cannot fire are never scheduled (space.ts); a pair found from both
 * of its faults is run once (equivalent); a pair whose first fault already fails alone is not run
 * (implied: the failure is already found, and the single is the smaller counterexample).
 *
 * Determinism: a wave's variations are known before it starts, sorted most informative first, and
 * what a wave discovers is read in that order once it has ended. Runs of a wave go `jobs` at a
 * time, but nothing decided depends on which ends first: `--jobs 4` gives `--jobs 1`'s matrix.
 * `--max-runs` cuts the same sorted list each time; `--time-budget` depends on the clock.
 */
import type { CallSite } from './call-sites.js'
import { siteName } from './call-sites.js'
import type { RunOutcome, VariationRunner } from './runner.js'
import type { FaultSpace, Skip } from './space.js'
import { describeVariation, rulesFor, type RunBase, stepRuleName, stepSetKey, type Variation } from './variation.js'
import { verdictOf, type ExploreChecks, type Verdict } from './verdict.js'
import { ToolstormError } from '../errors.js'

export interface Executed {
  readonly variation: Variation
  readonly outcome: RunOutcome
  readonly verdict: Verdict
  /** The run's call sites (route and ordinal; kinds for the routes the space knew or learnt from this run). */
  readonly sites: readonly CallSite[]
  /** A failure's cassette was taken before the run was forgotten (and handed to `keepCassette`). */
  readonly cassette: boolean
}

export interface Progress {
  readonly done: number
  /** Variations known so far (later waves add to it). */
  readonly total: number
  readonly failures: number
  /** Seconds the known variations still need, at the pace so far. */
  readonly secondsLeft: number | null
  readonly last: Executed
}

export interface SchedulerOptions {
  readonly space: FaultSpace
  readonly runner: VariationRunner
  readonly base: RunBase
  readonly depth: 1 | 2
  readonly jobs: number
  readonly maxRuns?: number | undefined
  readonly timeBudgetMs?: number | undefined
  readonly runTimeoutMs: number
  readonly checks: ExploreChecks
  /** Learn the kinds of call of a run's new routes from its recorded exchanges. */
  readonly sitesOfRun: (run: string) => Promise<CallSite[]>
  /**
   * Where a failing run's cassette goes as soon as the run ends (a counterexample's file), before
   * the run is forgotten; absent, no cassette is taken. Nothing of a run is kept in memory but its
   * report: a search of many runs stays flat.
   */
  readonly keepCassette?: ((variation: Variation, cassette: string) => Promise<void>) | undefined
  readonly onProgress?: ((progress: Progress) => void) | undefined
  readonly signal?: AbortSignal | undefined
}

/** The run id of a variation: one per variation, the same every explore. */
export function runIdOf(variation: Variation): string {
  return `explore-${variation.id}`
}

export class Scheduler {
  readonly #options: SchedulerOptions
  readonly executed: Executed[] = []
  readonly skips: Skip[] = []
  /** Routes first reached under a fault: the variation that reached them first. */
  readonly foundUnder = new Map<string, string>()
  readonly #seen = new Map<string, string>()
  #started = 0
  #completed = 0
  #known = 0
  #failures = 0
  readonly #began = performance.now()
  #stop: 'max-runs' | 'time-budget' | 'stopped' | null = null

  constructor(options: SchedulerOptions) {
    this.#options = options
  }

  /** Run `variations` (already sorted), `jobs` at a time, honouring the budgets; returns what ran, in the list's order. */
  async #wave(variations: readonly Variation[]): Promise<Executed[]> {
    const fresh: Variation[] = []
    for (const variation of variations) {
      const key = stepSetKey(variation)
      const same = this.#seen.get(key)
      if (same !== undefined) {
        this.skips.push({ reason: 'equivalent', what: variation.id, detail: `${describeVariation(variation)}: the same faults as ${same}`, variations: 1, ids: [variation.id], names: [describeVariation(variation)] })
        continue
      }
      this.#seen.set(key, variation.id)
      fresh.push(variation)
    }
    this.#known += fresh.length
    const results: Array<Executed | null> = new Array<Executed | null>(fresh.length).fill(null)
    const notRun = new Map<'max-runs' | 'time-budget' | 'stopped', string[]>()
    let next = 0
    const worker = async (): Promise<void> => {
      while (next < fresh.length) {
        const index = next++
        const variation = fresh[index]!
        const stop = this.#budgetSpent()
        if (stop) {
          notRun.set(stop, [...(notRun.get(stop) ?? []), variation.id])
          continue
        }
        this.#started++
        results[index] = await this.#execute(variation)
        // A run killed because explore was stopped proves nothing: it is not run, not a failure.
        if (results[index] === null) notRun.set('stopped', [...(notRun.get('stopped') ?? []), variation.id])
      }
    }
    await Promise.all(Array.from({ length: Math.max(1, Math.min(this.#options.jobs, fresh.length)) }, worker))
    for (const [reason, ids] of notRun) {
      const skipped = fresh.filter((variation) => ids.includes(variation.id))
      const sorted = skipped.map((variation) => variation.id)
      const detail = reason === 'max-runs' ? `not run: --max-runs ${this.#options.maxRuns} reached (the most informative ran first)` : reason === 'time-budget' ? `not run: --time-budget ${(this.#options.timeBudgetMs ?? 0) / 1000}s spent` : 'not run: explore was stopped'
      this.skips.push({ reason, what: `${sorted.length} variation(s)`, detail, variations: sorted.length, ids: sorted, names: skipped.map(describeVariation) })
      this.#known -= sorted.length
    }
    const ran = results.filter((result): result is Executed => result !== null)
    this.executed.push(...ran)
    return ran
  }

  #budgetSpent(): 'max-runs' | 'time-budget' | 'stopped' | null {
    if (this.#options.signal?.aborted) this.#stop = 'stopped'
    else if (this.#options.maxRuns !== undefined && this.#started >= this.#options.maxRuns) this.#stop ??= 'max-runs'
    else if (this.#options.timeBudgetMs !== undefined && performance.now() - this.#began >= this.#options.timeBudgetMs) this.#stop ??= 'time-budget'
    return this.#stop
  }

  async #execute(variation: Variation): Promise<Executed | null> {
    const { runner, space } = this.#options
    const run = runIdOf(variation)
    const rules = rulesFor(variation, this.#options.base)
    const outcome = await runner.run({ run, rules, timeoutMs: this.#options.runTimeoutMs })
    if (this.#options.signal?.aborted) {
      await runner.forget(run)
      return null
    }
    const verdict = verdictOf({ report: outcome.report, exit: outcome.exit, rules: variation.steps.map((step, index) => stepRuleName(index, step)), checks: this.#options.checks, timeoutSeconds: this.#options.runTimeoutMs / 1000 })
    // Kinds of call for routes no run reached before: from this run's recording, before it is forgotten.
    const newRoutes = outcome.report.calls.some((call) => !space.knows(call.route))
    const learnt = newRoutes ? await this.#options.sitesOfRun(run) : []
    const sites = sitesFromReport(outcome, learnt, space)
    const keep = this.#options.keepCassette
    const text = keep && verdict.status === 'fail' ? await runner.cassette(run).catch(() => null) : null
    if (text !== null) await keep!(variation, text)
    const cassette = text !== null
    await runner.forget(run)
    const executed: Executed = { variation, outcome, verdict, sites, cassette }
    if (verdict.status === 'fail') this.#failures++
    const done = ++this.#completed
    const elapsed = (performance.now() - this.#began) / 1000
    // The pace so far: runs still to go take as long as those done took (jobs at a time, as these did).
    this.#options.onProgress?.({ done, total: this.#known, failures: this.#failures, secondsLeft: ((this.#known - done) * elapsed) / done, last: executed })
    return executed
  }

  /** The whole search from the baseline's call sites. */
  async explore(singles: readonly Variation[]): Promise<void> {
    let wave = await this.#wave(singles)
    // Fallback paths: routes first reached under a fault, explored under the first passing variation that reached them.
    for (;;) {
      const next: Variation[] = []
      const implied = new Map<string, string>()
      for (const executed of wave) {
        const fresh = [...new Set(executed.sites.filter((site) => !this.#options.space.knows(site.route)).map((site) => site.route))]
        if (fresh.length === 0) continue
        if (executed.verdict.status !== 'pass') {
          for (const route of fresh) if (!implied.has(route)) implied.set(route, executed.variation.id)
          continue
        }
        const newSites = executed.sites.filter((site) => fresh.includes(site.route))
        this.#options.space.learn(newSites)
        for (const route of fresh) this.foundUnder.set(route, executed.variation.id)
        next.push(...this.#options.space.extend(executed.variation, newSites, 'fallback'))
      }
      for (const [route, id] of implied) {
        if (this.#options.space.knows(route)) continue
        this.skips.push({ reason: 'implied', what: route, detail: `reached only under faults that already fail alone (first: ${id}): a fault on it adds nothing to the counterexample`, variations: 0 })
      }
      if (next.length === 0) break
      wave = await this.#wave(this.#options.space.sort(next))
    }
    if (this.#options.depth < 2) return
    const pairs: Variation[] = []
    for (const executed of this.executed.filter((candidate) => candidate.variation.origin === 'single')) {
      if (executed.verdict.status === 'fail') {
        const count = this.#options.space.extend(executed.variation, executed.sites, 'pair').length
        if (count) this.skips.push({ reason: 'implied', what: executed.variation.id, detail: `${count} pair(s) with ${describeVariation(executed.variation)}: it fails alone`, variations: count })
        continue
      }
      if (executed.verdict.status === 'not-exercised') continue
      pairs.push(...this.#options.space.extend(executed.variation, executed.sites, 'pair'))
    }
    await this.#wave(this.#options.space.sort(pairs))
  }

  /**
   * `--only`: the variations of these ids, each found by running the steps before it (their runs
   * are not in the matrix) and then run.
   */
  async only(ids: readonly string[], singles: readonly Variation[]): Promise<void> {
    const chosen: Variation[] = []
    for (const id of ids) {
      const hashes = id.split('-')
      let candidates: readonly Variation[] = singles
      let found: Variation | undefined
      for (let depth = 1; depth <= hashes.length; depth++) {
        const want = hashes.slice(0, depth).join('-')
        found = candidates.find((candidate) => candidate.id === want)
        if (!found) throw new ToolstormError('ERR_EXPLORE_UNKNOWN_VARIATION', `Failed to find variation ${id}: ${depth === 1 ? 'no fault at a call site of the baseline has the id' : `no fault at a call site reached under ${hashes.slice(0, depth - 1).join('-')} has the id`} ${want}. The agent, the fault table (--faults, --config) or the seed changed since it was found; run toolstorm explore without --only to see the ids now.`)
        if (depth < hashes.length) {
          const prefix = found
          const outcome = await this.#options.runner.run({ run: `${runIdOf(prefix)}-prefix`, rules: rulesFor(prefix, this.#options.base), timeoutMs: this.#options.runTimeoutMs })
          const learnt = await this.#options.sitesOfRun(outcome.run)
          const fallback = new Set(learnt.filter((site) => !this.#options.space.knows(site.route)).map((site) => site.route))
          this.#options.space.learn(learnt)
          await this.#options.runner.forget(outcome.run)
          const sites = sitesFromReport(outcome, learnt, this.#options.space)
          candidates = [...this.#options.space.extend(prefix, sites.filter((site) => fallback.has(site.route)), 'fallback'), ...this.#options.space.extend(prefix, sites.filter((site) => !fallback.has(site.route)), 'pair')]
        }
      }
      chosen.push(found!)
    }
    await this.#wave(chosen)
  }
}

/** A run's call sites from its report, with each route's kind from the space, or from what this run's recording taught. */
function sitesFromReport(outcome: RunOutcome, learnt: readonly CallSite[], space: FaultSpace): CallSite[] {
  const sites: CallSite[] = []
  const seen = new Set<string>()
  for (const call of outcome.report.calls) {
    const kind = learnt.find((site) => site.route === call.route && site.ordinal === call.ordinal)?.kind ?? learnt.find((site) => site.route === call.route)?.kind ?? space.kindOf(call.route)
    const site = { route: call.route, ordinal: call.ordinal }
    if (!kind || seen.has(siteName(site))) continue
    seen.add(siteName(site))
    sites.push({ ...site, kind })
  }
  return sites
}

