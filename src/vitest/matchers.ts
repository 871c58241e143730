/**
 * `expect(storm)` matchers over a storm's report, the contract checks as assertions: a failure
 * names what failed as `toolstorm check` prints it (the duplicated effects' keys and calls, the
 * calls over a budget, why a rule never triggered). `toolstorm/vitest` registers them with
 * `expect.extend` when imported; `stormMatchers` is exported for other `expect`s.
 *
 * @example
 * expect(storm).toHaveTriggered('lost-ack')
 * expect(storm).toHaveNoDuplicateEffects()
 * expect(storm).toHaveAtMostCalls(3, { route: 'POST /ship' })
 * expect(storm).toHaveApprovedEffects({ effect: 'shipment', route: 'POST /approve' })
 */
import { contract, type Contract } from '../contracts/contract.js'
import type { Report } from '../engine/schema/report.js'
import { DEFAULT_RUN, type Storm } from '../engine/storm.js'
import { ConfigError } from '../errors.js'

/** What the matchers take: a storm (its default run's report; refused when only named runs saw calls), an interception, or a report. */
export type StormLike = Pick<Storm, 'report'> | { readonly storm: Pick<Storm, 'report'> } | Report

interface MatcherResult {
  pass: boolean
  message: () => string
}

/**
 * A storm's default run's report. When that run saw nothing and the storm's calls went to named
 * runs (`x-toolstorm-run`, a proxy's active run), judging it would pass every check on no evidence
 * (`no duplicate effects` over no commit): refused, naming the runs to ask for instead.
 */
function stormReport(storm: Pick<Storm, 'report'> & Partial<Pick<Storm, 'runIds'>>, matcher: string): Report {
  const report = storm.report()
  const seen = (run: Report) => run.calls.length + run.droppedCalls + run.budgetRejections > 0
  if (seen(report) || typeof storm.runIds !== 'function') return report
  const runs = storm.runIds().filter((run) => run !== DEFAULT_RUN && seen(storm.report(run)))
  if (runs.length === 0) return report
  throw new ConfigError(
    `Failed to run expect(…).${matcher}(): the storm's default run has no call, and its calls went to the run(s) ${runs.map((run) => `"${run}"`).join(', ')} (x-toolstorm-run, or a proxy's active run): pass the run's report, expect(storm.report('${runs[0]}')).`,
  )
}

function reportOf(received: unknown, matcher: string): Report {
  if (typeof received === 'object' && received !== null) {
    if ('report' in received && typeof received.report === 'function') return stormReport(received as Pick<Storm, 'report'>, matcher)
    if ('storm' in received && typeof received.storm === 'object' && received.storm !== null) return reportOf(received.storm, matcher)
    if ('calls' in received && 'effects' in received && Array.isArray(received.calls) && Array.isArray(received.effects)) return received as Report
  }
  throw new ConfigError(`Failed to run expect(…).${matcher}(): it takes a storm, an interception or a report, not ${received === null ? 'null' : typeof received}.`)
}

function result(checked: Contract, failed: string, passed: () => string): MatcherResult {
  const pass = checked.passed
  return { pass, message: () => (pass ? passed() : `${failed}\n${checked.failures().join('\n')}`) }
}

export const stormMatchers = {
  /** No effect identity was committed twice. */
  toHaveNoDuplicateEffects(received: unknown): MatcherResult {
    const report = reportOf(received, 'toHaveNoDuplicateEffects')
    return result(contract(report).noDuplicateEffects(), 'expected no effect to be committed twice', () => `expected an effect to be committed twice, but each of the ${report.effects.length} commit(s) was once`)
  },

  /** Each named rule (every rule, when none is named) triggered at least once. */
  toHaveTriggered(received: unknown, ...names: string[]): MatcherResult {
    const report = reportOf(received, 'toHaveTriggered')
    const which = names.length ? names.map((name) => `"${name}"`).join(', ') : 'every rule'
    const checked = contract(report).requireTriggered(...names)
    if (checked.checks.length === 0) return { pass: false, message: () => 'expected every rule to trigger, but the storm has no rules: name the rule, or configure one' }
    return result(checked, `expected ${which} to trigger`, () => `expected ${which} not to trigger, but ${checked.checks.map((check) => `${check.name}: ${check.detail}`).join('; ')}`)
  },

  /** At most `count` calls overall (refusals included), or on `options.route`. */
  toHaveAtMostCalls(received: unknown, count: number, options: { route?: string } = {}): MatcherResult {
    const report = reportOf(received, 'toHaveAtMostCalls')
    const where = options.route ? ` to ${options.route}` : ''
    const checked = contract(report).atMostCalls(count, options)
    return result(checked, `expected at most ${count} call(s)${where}`, () => `expected more than ${count} call(s)${where}, but ${checked.checks[0]?.detail ?? ''}`)
  },

  /** Every `effect` was committed after a 2xx answer from the approval `route`. */
  toHaveApprovedEffects(received: unknown, options: { effect: string; route: string }): MatcherResult {
    const report = reportOf(received, 'toHaveApprovedEffects')
    const checked = contract(report).effectsRequireApproval(options)
    return result(checked, `expected every "${options.effect}" effect to follow a 2xx answer from "${options.route}"`, () => `expected a "${options.effect}" effect without approval, but ${checked.checks[0]?.detail ?? ''}`)
  },
}

declare module 'vitest' {
  // The augmentation must repeat vitest's own declaration, `any` default included.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  interface Matchers<T = any> {
    /** No effect identity was committed twice; a failure names each duplicated key and the calls that committed it. */
    toHaveNoDuplicateEffects(): T
    /** Each named rule (every rule, when none is named) triggered at least once; a failure says why one never did. */
    toHaveTriggered(...names: string[]): T
    /** At most `count` calls overall (refusals included), or on `options.route`; a failure lists the calls. */
    toHaveAtMostCalls(count: number, options?: { route?: string }): T
    /** Every `effect` was committed after a 2xx answer from the approval `route`; a failure names each effect, its call and what the route answered. */
    toHaveApprovedEffects(options: { effect: string; route: string }): T
  }
}
