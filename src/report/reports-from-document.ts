/**
 * The reports inside a document: a standalone report, a demo run (`{report, …}`) or a
 * comparison (`{runs: [{report}, …]}`), each fully validated.
 */
import { ReportError } from '../errors.js'
import type { JsonValue } from '../json/canonical-json.js'
import type { Report } from '../engine/schema/report.js'
import { validateReport } from './validate-report.js'

const MAX_RUNS = 100

export function reportsFromDocument(document: JsonValue, source: string): Report[] {
  if (document === null || typeof document !== 'object' || Array.isArray(document)) {
    throw new ReportError(`Failed to read ${source}: $: expected a report, a demo run or a comparison (a JSON object).`)
  }
  if ('runs' in document) {
    const runs = document.runs
    if (!Array.isArray(runs) || runs.length < 1 || runs.length > MAX_RUNS) throw new ReportError(`Failed to read ${source}: $.runs: expected a list of 1–${MAX_RUNS} run records.`)
    return runs.map((run, index) => {
      if (run === null || typeof run !== 'object' || Array.isArray(run) || !('report' in run)) throw new ReportError(`Failed to read ${source}: $.runs[${index}]: expected a run record with a "report".`)
      return validateReport(run.report, source, `$.runs[${index}].report`)
    })
  }
  if ('report' in document && !('kind' in document)) return [validateReport(document.report, source, '$.report')]
  return [validateReport(document, source)]
}
