/** A short summary of a report: calls per route, faults, effects, coverage. */
import type { CoverageCounts, Report } from './schema/report.js'

export interface ReportSummary {
  readonly version: 1
  readonly run: string
  readonly calls: number
  readonly effects: number
  readonly duplicateEffects: number
  readonly budgetRejections: number
  readonly routes: Record<string, number>
  readonly faults: Record<string, number>
  readonly coverage: Record<string, CoverageCounts>
}

export function summarizeReport(report: Report): ReportSummary {
  const routes: Record<string, number> = {}
  const faults: Record<string, number> = {}
  for (const call of report.calls) {
    routes[call.route] = (routes[call.route] ?? 0) + 1
    if (call.injected && call.kind) faults[call.kind] = (faults[call.kind] ?? 0) + 1
  }
  const identities = new Set(report.effects.map((effect) => effect.identity))
  return {
    version: 1,
    run: report.run,
    calls: report.calls.length,
    effects: report.effects.length,
    duplicateEffects: report.effects.length - identities.size,
    budgetRejections: report.budgetRejections,
    routes,
    faults,
    coverage: report.coverage,
  }
}
