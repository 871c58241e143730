/**
 * The result of a replay, as the admin API serves it (`GET /report`) and `--report FILE` writes
 * it: the verdict, the table of expected vs seen, the effects the served exchanges had when
 * they were recorded, and the runs as served (`reports`: what `check` reads). Replay performs no
 * effect; it reports the recorded ones as evidence. With `contracts` (`toolstorm replay`, unless
 * `--no-contracts`), the contracts run on what it served too: an effect committed twice in the
 * served exchanges fails the verdict (`ERR_CONTRACT_FAILED`), so a fixture of a duplicate fails.
 */
import { z } from 'zod'
import type { CassetteExchange } from '../format/cassette-schema.js'
import { VERSION } from '../../version.js'
import type { ReplaySession } from './replay-session.js'
import { missDiffSchema } from './miss-diff.js'
import { cutExchanges } from '../format/cut-exchanges.js'
import { reportsFromCassette } from '../format/reports-from-cassette.js'
import type { Report } from '../../engine/schema/report.js'
import { contract } from '../../contracts/contract.js'
import { duplicateEffects, formatDuplicateEffects } from '../../engine/contracts/duplicate-effects.js'

export const REPLAY_REPORT_KIND = 'toolstorm.replay'
/** Table rows a report lists at most. */
const MAX_ROWS = 10_000
/** Runs a report carries the reports of at most. */
const MAX_REPORTS = 1000

export const replayRowSchema = z.strictObject({
  request: z.int().min(1).nullable(),
  position: z.int().min(1).nullable(),
  expected: z.string().nullable(),
  seen: z.string().nullable(),
  result: z.string(),
  /** A miss: the closest recorded exchange and what differs from it (JSON paths or the first differing byte). */
  diff: missDiffSchema.optional(),
})

export const replayReportSchema = z.strictObject({
  version: z.literal(1),
  kind: z.literal(REPLAY_REPORT_KIND),
  toolstorm: z.string(),
  cassette: z.string(),
  mode: z.enum(['replay', 'update', 'passthrough-unmatched', 'in-process']),
  order: z.enum(['strict', 'any']),
  passed: z.boolean(),
  code: z.enum(['ERR_CASSETTE_MISMATCH', 'ERR_CASSETTE_EXTRA', 'ERR_CASSETTE_TRUNCATED', 'ERR_CASSETTE_UNUSED', 'ERR_CONTRACT_FAILED']).nullable(),
  message: z.string(),
  expected: z.int().min(0),
  served: z.int().min(0),
  repeats: z.int().min(0),
  passedThrough: z.int().min(0),
  /** Requests on live routes (`--live`, `--replay-only`): sent to the network, outside the verdict. */
  live: z.int().min(0).default(0),
  unused: z.int().min(0),
  /** Served responses whose body was cut at the body limit when recorded: they broke off (`truncated` rows). */
  truncated: z.int().min(0),
  table: z.array(replayRowSchema),
  /** Rows left out of `table`. */
  droppedRows: z.int().min(0),
  /** Effects recorded for the served exchanges (repeats included): evidence, never performed. */
  effects: z.array(
    z.strictObject({ position: z.int().min(1), run: z.string(), route: z.string(), name: z.string(), key: z.string(), identity: z.int().min(1), redacted: z.boolean() }),
  ),
  /** Effects whose (run, identity) was already listed: what a duplicate write looked like when recorded. */
  duplicateEffects: z.int().min(0),
  /** The served exchanges' runs as reports (the first 1,000 runs): `check` reads them. */
  reports: z.array(z.unknown()).max(MAX_REPORTS).optional(),
  /** The contracts run on what was served (absent with --no-contracts, and in-process). */
  contracts: z.strictObject({ passed: z.boolean(), runs: z.array(z.strictObject({ run: z.string(), passed: z.boolean(), failed: z.array(z.string()) })) }).optional(),
})

export type ReplayReport = z.infer<typeof replayReportSchema>
export type ReplayMode = ReplayReport['mode']

/** The runs of the exchanges a replay served (each once, in the order served), renumbered as a cassette of their own. */
export function servedReports(session: ReplaySession): Report[] {
  const positions = [...new Set(session.servedPositions)]
  const exchanges = cutExchanges(positions.map((position) => session.cassette.exchanges[position] as CassetteExchange))
  if (exchanges.length === 0) return []
  return reportsFromCassette({ header: session.cassette.header, exchanges, source: `${session.cassette.source} (as replayed)` })
}

/** `noDuplicateEffects` on each served run: what a replay verdict adds with `contracts`. */
function servedContracts(reports: readonly Report[]): NonNullable<ReplayReport['contracts']> {
  const runs = reports.map((report) => {
    const result = contract(report).noDuplicateEffects().toJSON()
    const failed = result.checks.filter((check) => !check.passed).flatMap((check) => [`${check.name}: ${check.detail}`, ...formatDuplicateEffects(duplicateEffects(report))])
    return { run: report.run, passed: result.passed, failed }
  })
  return { passed: runs.every((run) => run.passed), runs }
}

export function replayReport(session: ReplaySession, mode: ReplayMode, options: { contracts?: boolean } = {}): ReplayReport {
  const replayed = session.verdict()
  const reports = servedReports(session)
  const contracts = options.contracts ? servedContracts(reports) : undefined
  const failedRuns = contracts?.runs.filter((run) => !run.passed) ?? []
  // A faithful replay of a run that committed twice is a fixture of that bug: the verdict fails.
  const verdict =
    replayed.passed && failedRuns.length
      ? { ...replayed, passed: false, code: 'ERR_CONTRACT_FAILED' as const, message: `Failed the contracts on what ${session.cassette.source} served: ${failedRuns.map((run) => `run ${run.run}: ${run.failed.join('; ')}`).join(' | ')} (--no-contracts replays without them).` }
      : replayed
  const effects: ReplayReport['effects'] = []
  const seen = new Set<string>()
  let duplicates = 0
  for (const position of session.servedPositions) {
    const exchange = session.cassette.exchanges[position] as CassetteExchange
    for (const effect of exchange.effects) {
      const identity = `${exchange.run}\u0000${effect.identity}`
      if (seen.has(identity)) duplicates++
      seen.add(identity)
      effects.push({ position: position + 1, run: exchange.run, route: exchange.route, name: effect.name, key: effect.key, identity: effect.identity, redacted: effect.redacted })
    }
  }
  return {
    version: 1,
    kind: REPLAY_REPORT_KIND,
    toolstorm: VERSION,
    cassette: session.cassette.source,
    mode,
    order: session.order,
    passed: verdict.passed,
    code: verdict.code,
    message: verdict.message,
    expected: verdict.expected,
    served: verdict.served,
    repeats: verdict.repeats,
    passedThrough: verdict.passedThrough,
    live: verdict.live,
    unused: verdict.unused,
    truncated: verdict.truncated,
    table: verdict.rows.slice(0, MAX_ROWS),
    droppedRows: Math.max(0, verdict.rows.length - MAX_ROWS),
    effects: effects.slice(0, 10_000),
    duplicateEffects: duplicates,
    reports: reports.slice(0, MAX_REPORTS),
    ...(contracts ? { contracts } : {}),
  }
}
