/** A short summary of a report: calls per route, faults, effects, coverage. */
import { duplicateEffects, type DuplicateEffect } from '../engine/contracts/duplicate-effects.js'
import type { CoverageCounts, RecoveryRecord, RefusedEffects, Report } from '../engine/schema/report.js'
import { recoveryOf } from '../engine/recovery.js'
import { contradicted, rejudgeClaims } from '../claims/claim-verdict.js'
import type { ClaimVerdict } from '../engine/schema/claim-schema.js'

export interface ReportSummary {
  readonly version: 1
  readonly run: string
  /** Every call of the run, those past the 10,000 a report lists included. */
  readonly calls: number
  /** Calls past the 10,000 a report lists: counted, not itemized (the per-route, fault and model counts cover the listed ones). */
  readonly droppedCalls: number
  readonly effects: number
  readonly duplicateEffects: number
  /** Which effects were committed twice or more (name, key, calls). */
  readonly duplicates: readonly DuplicateEffect[]
  readonly budgetRejections: number
  /** Effect reports refused while the run was kept (its effects may be incomplete: the checks on effects fail); absent when none. */
  readonly refusedEffects?: RefusedEffects
  readonly routes: Record<string, number>
  readonly faults: Record<string, number>
  readonly coverage: Record<string, CoverageCounts>
  /** Model calls, and the tokens they reported (sums of the known counts). */
  readonly modelCalls: { readonly calls: number; readonly streamed: number; readonly inputTokens: number; readonly outputTokens: number; readonly withoutUsage: number; readonly models: Record<string, number> }
  /** Calls whose stream an injected fault cut. */
  readonly cutStreams: number
  /** What recovering from each triggered fault cost (recomputed from the calls); absent when none triggered. */
  readonly recovery?: readonly RecoveryRecord[]
  /** The agent's claims by verdict, judged again from the trace, and those the effects contradict (docs/claims.md); absent without claims. */
  readonly claims?: { readonly total: number; readonly verdicts: Partial<Record<ClaimVerdict, number>>; readonly contradicted: ReadonlyArray<{ id: number; tool: string; status: string; verdict: ClaimVerdict; calls: readonly number[] }> }
}

export function summarizeReport(report: Report): ReportSummary {
  const routes: Record<string, number> = {}
  const faults: Record<string, number> = {}
  for (const call of report.calls) {
    routes[call.route] = (routes[call.route] ?? 0) + 1
    if (call.injected && call.kind) faults[call.kind] = (faults[call.kind] ?? 0) + 1
  }
  const modelCalls = { calls: 0, streamed: 0, inputTokens: 0, outputTokens: 0, withoutUsage: 0, models: {} as Record<string, number> }
  let cutStreams = 0
  for (const call of report.calls) {
    if (call.cut) cutStreams++
    const model = call.model
    if (!model) continue
    modelCalls.calls++
    if (model.streamed) modelCalls.streamed++
    modelCalls.inputTokens += model.inputTokens ?? 0
    modelCalls.outputTokens += model.outputTokens ?? 0
    if (model.inputTokens === null || model.outputTokens === null) modelCalls.withoutUsage++
    const name = model.model ?? '(unknown)'
    modelCalls.models[name] = (modelCalls.models[name] ?? 0) + 1
  }
  const duplicates = duplicateEffects(report)
  const recovery = recoveryOf(report.calls)
  const judged = rejudgeClaims(report)
  const verdicts: Partial<Record<ClaimVerdict, number>> = {}
  for (const claim of judged) verdicts[claim.verdict] = (verdicts[claim.verdict] ?? 0) + 1
  return {
    version: 1,
    run: report.run,
    calls: report.calls.length + report.droppedCalls,
    droppedCalls: report.droppedCalls,
    effects: report.effects.length,
    duplicateEffects: duplicates.reduce((sum, effect) => sum + effect.count - 1, 0),
    duplicates,
    budgetRejections: report.budgetRejections,
    ...(report.refusedEffects ? { refusedEffects: report.refusedEffects } : {}),
    routes,
    faults,
    coverage: report.coverage,
    modelCalls,
    cutStreams,
    ...(recovery.length ? { recovery } : {}),
    ...(judged.length
      ? { claims: { total: judged.length, verdicts, contradicted: judged.filter((claim) => contradicted(claim.verdict)).map(({ id, tool, status, verdict, calls }) => ({ id, tool, status, verdict, calls })) } }
      : {}),
  }
}
