/**
 * The reports inside a document: a standalone report, a demo run (`{report, …}`), a comparison
 * or a report set (`{runs: [{report}, …]}`, any number of runs), each fully validated. A report
 * set may say runs were left out of it (`omitted`: evicted before it was written).
 */
import { ReportError } from '../errors.js'
import type { JsonValue } from '../json/canonical-json.js'
import type { Report } from '../engine/schema/report.js'
import { validateReport } from './validate-report.js'

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
