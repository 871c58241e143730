/**
 * What every command that runs a storm shares (proxy, record, replay, mcp, har): the storm from
 * `--rules`/`--seed`/`--clock`, and the report document written at the end. Apart from proxy.ts
 * so a command that runs no proxy (`toolstorm mcp`) does not load the data plane.
 */
import { RealClock, VirtualClock } from '../engine/clock.js'
import type { StormConfig } from '../engine/schema/config.js'
import { createStorm, parseConfig } from '../create-storm.js'
import type { Storm } from '../engine/storm.js'
import { formatRuleWarning, lintRules } from '../lint/lint-rules.js'
import { loadConfigFile } from '../io/load-config-file.js'
import { VERSION } from '../version.js'
import { printError } from './output.js'
import type { RunLedger } from '../engine/ledger/run-ledger.js'
import { MemoryLedger } from '../engine/ledger/memory-ledger.js'

/** What the storm is made from. */
export interface StormArgs {
  rules?: string | undefined
  seed?: number | undefined
  clock: 'real' | 'virtual'
  /** The runs the ledger keeps in memory (`--max-runs`); its default when not given. */
  'max-runs'?: number | undefined
}

/** Build the storm from --rules/--seed/--clock, printing the rules' lint warnings. */
export async function stormFromArgs(args: StormArgs): Promise<Storm> {
  let config: StormConfig = args.rules ? await loadConfigFile(args.rules) : parseConfig({})
  if (args.seed !== undefined) config = { ...config, seed: args.seed }
  const storm = createStorm(config, { clock: args.clock === 'virtual' ? new VirtualClock() : new RealClock() })
  // Linted with the storm's plug-ins: their route names (MCP tools, model calls) are known routes.
  for (const warning of lintRules(config, storm.plugins)) printError(`warning: ${formatRuleWarning(warning)}`)
  if (args['max-runs'] !== undefined) storm.ledger.maxRuns = args['max-runs']
  return storm
}

/**
 * The report document for every run a ledger keeps (with `--state`, every replica's): one report,
 * or `{runs: [{report}]}`; when runs were evicted before it was written, a report set that says how
 * many (`omitted`), so a reader never takes it for every run.
 */
export async function reportDocument(ledger: RunLedger): Promise<unknown> {
  const ids = await ledger.runIds()
  const reports = new Map<string, unknown>()
  for (const id of ids.length ? ids : [undefined]) reports.set(id ?? '', await ledger.report(id))
  const evicted = ledger instanceof MemoryLedger ? ledger.evictedRuns : 0
  const omitted = evicted ? { runs: evicted, reason: `evicted: this proxy kept the last ${(ledger as MemoryLedger).maxRuns} runs (--max-runs)` } : null
  return reportSet(ids, (id) => reports.get(id ?? ''), omitted)
}

function reportSet(ids: string[], report: (id: string | undefined) => unknown, omitted: { runs: number; reason: string } | null): unknown {
  if (ids.length <= 1 && !omitted) return report(ids[0])
  return { version: 1, kind: 'toolstorm.report-set', toolstorm: VERSION, runs: ids.map((id) => ({ run: id, report: report(id) })), ...(omitted ? { omitted } : {}) }
}

/** The line printed when runs were left out of a report. */
export function describeOmitted(document: unknown): string | null {
  const omitted = (document as { omitted?: { runs: number; reason: string } } | null)?.omitted
  return omitted ? `warning: ${omitted.runs} runs are not in the report (${omitted.reason}); see docs/incidents.md#runs-are-never-silently-forgotten` : null
}
