/**
 * The verdict on one run: FAIL when the command failed (its own assertions: a non-zero exit), hung
 * (killed at `--run-timeout`), or broke a contract on what it committed (no duplicate effects,
 * always; the budgets and the claims when asked). A variation whose faults never fired is
 * **not exercised**: it proves nothing, so it is never a pass (OpenHands/benchmarks#764: "a fault
 * that never landed" must not score as survived). Every run carries its recovery cost.
 */
import { contract } from '../contracts/contract.js'
import type { Report } from '../engine/schema/report.js'

/** What explore checks besides the command's exit code (`--max-calls`, …). */
export interface ExploreChecks {
  readonly maxCalls?: number | undefined
  readonly maxModelCalls?: number | undefined
  readonly maxTokens?: number | undefined
  readonly maxRecoveryTokens?: number | undefined
  /** Hold the agent's claims against the effects when it reported any (default true). */
  readonly claims?: boolean | undefined
}

/** How the command ended. */
export interface CommandExit {
  /** Its exit code; null when a signal ended it. */
  readonly code: number | null
  readonly signal: string | null
  /** Killed at `--run-timeout`. */
  readonly timedOut: boolean
}

export interface FailedCheck {
  readonly check: string
  readonly detail: string
}

export type VerdictStatus = 'pass' | 'fail' | 'not-exercised'

export interface RecoveryCost {
  /** Calls made after the faults, up to the success that recovered them. */
  readonly calls: number
  readonly modelCalls: number
  readonly tokens: number
  /** Seconds from each fault to its recovery, summed; null when one never recovered. */
  readonly seconds: number | null
  /** Whether every faulted route answered a success later in the run. */
  readonly recovered: boolean
}

export interface Verdict {
  readonly status: VerdictStatus
  /** Whether every fault of the variation fired (its rule triggered). */
  readonly fired: boolean
  readonly failed: readonly FailedCheck[]
  readonly recovery: RecoveryCost | null
}

/** The checks the contract makes of every run, in order. */
export function contractOf(report: Report, checks: ExploreChecks) {
  const built = contract(report).noDuplicateEffects()
  if (checks.maxCalls !== undefined) built.atMostCalls(checks.maxCalls)
  if (checks.maxModelCalls !== undefined) built.atMostModelCalls(checks.maxModelCalls)
  if (checks.maxTokens !== undefined) built.atMostTokens(checks.maxTokens)
  if (checks.maxRecoveryTokens !== undefined) built.maxRecoveryTokens(checks.maxRecoveryTokens)
  if ((checks.claims ?? true) && report.claims?.length) built.claimsMatchEffects()
  return built
}

/** What the command's end says: a failed check, or null when it exited 0. */
export function exitCheck(exit: CommandExit, timeoutSeconds: number): FailedCheck | null {
  if (exit.timedOut) return { check: 'Run timeout', detail: `still running after --run-timeout ${timeoutSeconds}s: killed (a hang)` }
  if (exit.code === 0) return null
  return { check: 'Command exit', detail: exit.code === null ? `ended by ${exit.signal ?? 'a signal'}` : `exited ${exit.code}` }
}

/** The recovery cost of the run's triggered faults (report.recovery), summed. */
export function recoveryCost(report: Report): RecoveryCost | null {
  const records = report.recovery ?? []
  if (records.length === 0) return null
  let seconds: number | null = 0
  for (const record of records) seconds = record.seconds === null || seconds === null ? null : seconds + record.seconds
  return {
    calls: records.reduce((sum, record) => sum + record.calls, 0),
    modelCalls: records.reduce((sum, record) => sum + record.modelCalls, 0),
    tokens: records.reduce((sum, record) => sum + record.inputTokens + record.outputTokens, 0),
    seconds: seconds === null ? null : Math.round(seconds * 1000) / 1000,
    recovered: records.every((record) => record.recovered),
  }
}

/** The verdict on a run whose rules are named `rules` (all must have triggered for it to be exercised). */
export function verdictOf(input: { report: Report; exit: CommandExit; rules: readonly string[]; checks: ExploreChecks; timeoutSeconds: number }): Verdict {
  const { report, exit, rules, checks } = input
  const failed: FailedCheck[] = []
  const ended = exitCheck(exit, input.timeoutSeconds)
  if (ended) failed.push(ended)
  const built = contractOf(report, checks)
  const lines = built.failures()
  for (const check of built.checks) {
    if (check.passed) continue
    // The contract's own naming (the duplicated keys and their calls) joins its detail.
    const start = lines.indexOf(`${check.name}: ${check.detail}`)
    const naming = start < 0 ? [] : lines.slice(start + 1).filter((line, index, all) => line.startsWith('    ') && all.slice(0, index).every((before) => before.startsWith('    ')))
    failed.push({ check: check.name, detail: [check.detail, ...naming.map((line) => line.trim())].join('; ') })
  }
  const fired = rules.length > 0 && rules.every((name) => (report.coverage[name]?.triggered ?? 0) > 0)
  // A failure the faults did not cause still fails (it is the agent's), and says so.
  if (!fired && rules.length > 0 && failed.length) failed.push({ check: 'Fault fired', detail: 'the fault never fired: this failure happened without it (a flaky agent?)' })
  const status: VerdictStatus = failed.length ? 'fail' : fired || rules.length === 0 ? 'pass' : 'not-exercised'
  return { status, fired, failed, recovery: recoveryCost(report) }
}
