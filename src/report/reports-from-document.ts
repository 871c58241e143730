/**
 * The reports inside a document: a standalone report, a demo run (`{report, …}`), a comparison
 * or a report set (`{runs: [{report}, …]}`, any number of runs), each fully validated. A report
 * set may say runs were left out of it (`omitted`: evicted before it was written).
 */
import { ReportError } from '../errors.js'
import type { JsonValue } from '../json/canonical-json.js'
import type { Report } from '../engine/schema/report.js'
import { validateReport } from './validate-report.js'
import { z } from 'zod'
import { SCENARIO_IDS, type ScenarioId } from '../demo/scenarios.js'

/** What a report set says it left out. */
export interface OmittedRuns {
  readonly runs: number
  readonly reason: string
}

/** What a replay's report says of the replay itself (the served runs are its `reports`), or null for any other document. */
export function replayVerdictOf(document: JsonValue): { passed: boolean; code: string | null; message: string } | null {
  if (document === null || typeof document !== 'object' || Array.isArray(document) || document.kind !== 'toolstorm.replay') return null
  return { passed: document.passed === true, code: typeof document.code === 'string' ? document.code : null, message: typeof document.message === 'string' ? document.message : '' }
}

/** The `omitted` a report set declares, or null. */
export function omittedRuns(document: JsonValue): OmittedRuns | null {
  if (document === null || typeof document !== 'object' || Array.isArray(document) || !('omitted' in document)) return null
  const omitted = document.omitted as { runs?: unknown; reason?: unknown } | null
  return omitted && typeof omitted.runs === 'number' && typeof omitted.reason === 'string' ? { runs: omitted.runs, reason: omitted.reason } : null
}

export function reportsFromDocument(document: JsonValue, source: string): Report[] {
  if (document === null || typeof document !== 'object' || Array.isArray(document)) {
    throw new ReportError(`Failed to read ${source}: $: expected a report, a demo run or a comparison (a JSON object).`)
  }
  // A replay's report (`toolstorm replay --report`): the runs as it served them.
  if (document.kind === 'toolstorm.replay') {
    const reports = document.reports
    if (!Array.isArray(reports) || reports.length === 0) throw new ReportError(`Failed to read ${source}: $.reports: expected the runs the replay served (a replay report of toolstorm before #40 has none; replay again to get one).`)
    return reports.map((report, index) => validateReport(report, source, `$.reports[${index}]`))
  }
  if ('runs' in document) {
    const runs = document.runs
    if (!Array.isArray(runs) || runs.length < 1) throw new ReportError(`Failed to read ${source}: $.runs: expected a list of run records (at least one).`)
    return runs.map((run, index) => {
      if (run === null || typeof run !== 'object' || Array.isArray(run) || !('report' in run)) throw new ReportError(`Failed to read ${source}: $.runs[${index}]: expected a run record with a "report".`)
      return validateReport(run.report, source, `$.runs[${index}].report`)
    })
  }
  if ('report' in document && !('kind' in document)) return [validateReport(document.report, source, '$.report')]
  return [validateReport(document, source)]
}

/** What a demo run holds besides its report, for its scenario's own checks (src/demo/scenario-checks.ts). */
export interface DemoRunFacts {
  readonly scenario: ScenarioId
  readonly completed: boolean
  /** Seconds of virtual time the run took. */
  readonly elapsed: number
  /** The call budget the demo ran with. */
  readonly maxCalls: number
}

const demoRunSchema = z.object({
  scenario: z.enum(SCENARIO_IDS),
  outcome: z.object({ completed: z.boolean() }),
  config: z.object({ maxCalls: z.int().min(0) }),
  stats: z.object({ elapsed: z.number().min(0) }),
})

/**
 * The facts of each demo run in a document, in the order of `reportsFromDocument` (null for a run
 * that is not a demo's: a report, a report set's run); an empty list for any other document. A
 * run that names a scenario must hold the rest: a demo run cut short is refused, not checked
 * without its scenario's checks.
 */
export function demoRunsOf(document: JsonValue, source: string): Array<DemoRunFacts | null> {
  if (document === null || typeof document !== 'object' || Array.isArray(document) || document.kind === 'toolstorm.replay') return []
  const facts = (run: JsonValue, at: string): DemoRunFacts | null => {
    if (run === null || typeof run !== 'object' || Array.isArray(run) || !('scenario' in run)) return null
    const parsed = demoRunSchema.safeParse(run)
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!
      throw new ReportError(`Failed to read ${source}: ${[at, ...issue.path].join('.')}: ${issue.message} (a demo run holds its scenario, outcome.completed, config.maxCalls and stats.elapsed).`)
    }
    const { scenario, outcome, config, stats } = parsed.data
    return { scenario, completed: outcome.completed, elapsed: stats.elapsed, maxCalls: config.maxCalls }
  }
  if ('runs' in document) return Array.isArray(document.runs) ? document.runs.map((run, index) => facts(run, `$.runs[${index}]`)) : []
  if ('report' in document && !('kind' in document)) return [facts(document, '$')]
  return []
}
