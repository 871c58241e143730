/**
 * `toolstorm inspect --runs`: one line per run (calls, statuses, faults, effects, duplicates, and
 * a verdict: `failed` when something went wrong in it, what-went-wrong.ts), for finding the runs
 * worth a look among thousands; `--failed` keeps only those.
 */
import { duplicateEffects } from '../engine/contracts/duplicate-effects.js'
import type { EffectRecord, Report } from '../engine/schema/report.js'
import type { CassetteExchange, CassetteHeader } from '../cassette/format/cassette-schema.js'
import { callWentWrong, reportWentWrong, runWentWrong, type WhatWentWrong } from './what-went-wrong.js'

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

/** A run's line with the routes it called (the dashboard filters runs by route). */
export interface RunLineWithRoutes extends RunLine {
  readonly routes: readonly string[]
}

/**
 * `GET /runs/lines`: the line of every run a proxy keeps, as `inspect --runs --json` prints them,
 * each with its routes. A run forgotten between listing and reading it is left out.
 */
export async function runLinesOfLedger(ledger: { runIds(): Promise<string[]>; report(run: string): Promise<Report> }): Promise<{ runs: RunLineWithRoutes[]; total: number; failed: number }> {
  const runs: RunLineWithRoutes[] = []
  for (const id of await ledger.runIds()) {
    let report: Report
    try {
      report = await ledger.report(id)
    } catch {
      continue
    }
    runs.push({ ...runLine(report), routes: [...new Set(report.calls.map((call) => call.route))] })
  }
  return { runs, total: runs.length, failed: runs.filter((line) => line.verdict === 'failed').length }
}

/** Counts of one run, gathered exchange by exchange. */
interface Tally {
  readonly run: string
  calls: number
  readonly statuses: Record<string, number>
  readonly faults: Record<string, number>
  readonly effects: EffectRecord[]
  readonly wrong: WhatWentWrong[]
}

/**
 * The lines of a cassette's runs straight from its exchanges, in one pass (no report is built and
 * validated per run: on 100,000 exchanges in 25,000 runs that took longer than loading them). A run
 * whose calls begin at 1 again is a new one (`run~2`), as in the cassette's reports.
 */
export function runLinesOfCassette(cassette: { readonly header: CassetteHeader; readonly exchanges: readonly CassetteExchange[] }): RunLine[] {
  const tallies: Tally[] = []
  const current = new Map<string, Tally>()
  const epochs = new Map<string, number>()
  const open = (run: string): Tally => {
    const epoch = (epochs.get(run) ?? 0) + 1
    epochs.set(run, epoch)
    const tally: Tally = { run: epoch === 1 ? run : `${run}~${epoch}`, calls: 0, statuses: {}, faults: {}, effects: [], wrong: [] }
    tallies.push(tally)
    current.set(run, tally)
    return tally
  }
  for (const exchange of cassette.exchanges) {
    let tally = current.get(exchange.run) ?? open(exchange.run)
    if (exchange.call === 1 && tally.calls > 0) tally = open(exchange.run)
    tally.calls++
    const status = exchange.outcome === 'response' && exchange.response ? String(exchange.response.status) : exchange.outcome
    tally.statuses[status] = (tally.statuses[status] ?? 0) + 1
    if (exchange.fault?.injected) tally.faults[exchange.fault.kind] = (tally.faults[exchange.fault.kind] ?? 0) + 1
    for (const effect of exchange.effects) tally.effects.push({ ...effect, call: exchange.call ?? 0 })
    const upstreamStatus = exchange.upstream?.status ?? (exchange.executed && exchange.response ? exchange.response.status : null)
    tally.wrong.push(...callWentWrong({ id: exchange.call, route: exchange.route, outcome: exchange.outcome, executed: exchange.executed, error: exchange.error, upstreamStatus, fault: exchange.fault?.rule ?? null, kind: exchange.fault?.kind ?? null, injected: exchange.fault?.injected ?? false }))
  }
  const claims = new Map<string, NonNullable<Report['claims']>>()
  for (const { run, ...claim } of cassette.header.claims ?? []) claims.set(run, [...(claims.get(run) ?? []), claim])
  return tallies.map((tally) => {
    const own = claims.get(tally.run)
    const wrong = [...tally.wrong, ...reportWentWrong({ effects: tally.effects, ...(own ? { claims: own } : {}) })]
    return {
      run: tally.run,
      verdict: wrong.length ? 'failed' : 'ok',
      calls: tally.calls,
      statuses: tally.statuses,
      faults: tally.faults,
      effects: tally.effects.length,
      duplicates: duplicateEffects({ effects: tally.effects }).length,
      why: [...new Set(wrong.map((item) => item.why))],
      detail: wrong.slice(0, 5).map((item) => item.detail),
    }
  })
}

/** The line as text: `FAIL run-017  2 calls  200×1 500×1  effects 1  upstream_error: call 2 (POST /ship): the upstream answered 500`. */
export function formatRunLine(line: RunLine): string {
  const counts = (record: Record<string, number>) => Object.entries(record).map(([name, count]) => `${name}×${count}`).join(' ')
  const faults = Object.keys(line.faults).length ? `  faults ${counts(line.faults)}` : ''
  const duplicates = line.duplicates ? `  duplicates ${line.duplicates}` : ''
  const why = line.why.length ? `  ${line.why.join(', ')}: ${line.detail[0] ?? ''}` : ''
  return `${line.verdict === 'failed' ? 'FAIL' : 'ok  '} ${line.run}  ${line.calls} calls  ${counts(line.statuses) || 'no status'}${faults}  effects ${line.effects}${duplicates}${why}`
}
