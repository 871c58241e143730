/**
 * `toolstorm inspect --runs`: one line per run (calls, statuses, faults, effects, duplicates, and
 * a verdict: `failed` when something went wrong in it, what-went-wrong.ts), for finding the runs
 * worth a look among thousands; `--failed` keeps only those.
 */
import { duplicateEffects } from '../engine/contracts/duplicate-effects.js'
import type { Report } from '../engine/schema/report.js'
import { runWentWrong } from './what-went-wrong.js'

export interface RunLine {
  readonly run: string
  readonly verdict: 'ok' | 'failed'
  readonly calls: number
  /** Statuses the client received, and `reset` / `error` / `cancelled` for calls with none. */
  readonly statuses: Record<string, number>
  /** Injected faults by kind. */
  readonly faults: Record<string, number>
  readonly effects: number
  readonly duplicates: number
  /** What went wrong, each reason once, in the order seen. */
  readonly why: readonly string[]
  /** What shows it, at most 5. */
  readonly detail: readonly string[]
}

export function runLine(report: Report): RunLine {
  const statuses: Record<string, number> = {}
  const faults: Record<string, number> = {}
  for (const call of report.calls) {
    const status = call.status !== null && call.outcome === 'response' ? String(call.status) : call.outcome
    statuses[status] = (statuses[status] ?? 0) + 1
    if (call.injected && call.kind) faults[call.kind] = (faults[call.kind] ?? 0) + 1
  }
  const wrong = runWentWrong(report)
  return {
    run: report.run,
    verdict: wrong.length ? 'failed' : 'ok',
    calls: report.calls.length + report.droppedCalls,
    statuses,
    faults,
    effects: report.effects.length,
    duplicates: duplicateEffects(report).length,
    why: [...new Set(wrong.map((item) => item.why))],
    detail: wrong.slice(0, 5).map((item) => item.detail),
  }
}

/** The line as text: `FAIL run-017  2 calls  200×1 500×1  effects 1  upstream_error: call 2 (POST /ship): the upstream answered 500`. */
export function formatRunLine(line: RunLine): string {
  const counts = (record: Record<string, number>) => Object.entries(record).map(([name, count]) => `${name}×${count}`).join(' ')
  const faults = Object.keys(line.faults).length ? `  faults ${counts(line.faults)}` : ''
  const duplicates = line.duplicates ? `  duplicates ${line.duplicates}` : ''
  const why = line.why.length ? `  ${line.why.join(', ')}: ${line.detail[0] ?? ''}` : ''
  return `${line.verdict === 'failed' ? 'FAIL' : 'ok  '} ${line.run}  ${line.calls} calls  ${counts(line.statuses) || 'no status'}${faults}  effects ${line.effects}${duplicates}${why}`
}
