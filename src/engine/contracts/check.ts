/**
 * The pluggable contract unit: one file per check family, registered by `type`.
 * A unit reads only the report, so contracts run the same on a live run, a saved report or a
 * cassette.
 */
import type { CallRecord, Report } from '../schema/report.js'

export interface Check {
  readonly name: string
  readonly passed: boolean
  readonly detail: string
}

export interface ContractUnit<P> {
  readonly type: string
  explain(params: P): string
  check(report: Report, params: P): Check[]
}

export function defineContractUnit<P>(unit: ContractUnit<P>): ContractUnit<P> {
  return unit
}

/** Why a count over the report's calls may be short: calls past the 10,000 it lists (`droppedCalls`). */
export const unlistedCalls = (report: Pick<Report, 'droppedCalls'>): string => `${report.droppedCalls} call(s) past the 10,000 a report lists were not itemized`

/**
 * Why a count over the report's calls may be short with a shared state store: exchanges a replica
 * served while Redis was unreachable (answered 503 or passed through untouched), in no call list.
 */
export const uncountedCalls = (report: Pick<Report, 'stateUnavailable'>): string =>
  `${report.stateUnavailable} exchange(s) were served while the shared state store was unreachable, uncounted`

/** Methods that commit nothing by definition (RFC 9110 §9.2.1). */
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS'])

/**
 * A write whose answer a fault lost after its upstream answered it in full (`response_lost`): the
 * commit a retry would duplicate. Not a model call, a safe method or an MCP message other than a
 * tool call: those commit nothing.
 */
function lostWrite(call: CallRecord): boolean {
  return call.phase === 'after-commit' && call.injected && call.executed && !call.model && !SAFE_METHODS.has(call.method.toUpperCase()) && (!call.mcp || call.mcp.method === 'tools/call')
}

/**
 * A check on effects cannot pass on a run whose effects may be incomplete: effect reports were
 * refused while the run was kept (a commit may be missing), calls were served while the shared
 * state store was unreachable, or none was reported at all although a
 * write lost its answer after its upstream committed it (the tool side reports nothing: a duplicate
 * could not be seen). Failed then, its detail saying so; a run with no effect says so in passing.
 */
export function withEffectEvidence(report: Pick<Report, 'refusedEffects' | 'effects' | 'calls' | 'stateUnavailable'>, check: Check): Check {
  const refused = report.refusedEffects
  if (refused) return { ...check, passed: false, detail: `${check.detail}, but ${refused.count} effect report(s) were refused while the run was kept, so its effects may be incomplete (first: ${refused.first})` }
  // Redis was away: the calls it missed, and the effect reports for them, are not in the report.
  if (report.stateUnavailable) return { ...check, passed: false, detail: `${check.detail}, but ${uncountedCalls(report)}, so its effects may be incomplete` }
  if (report.effects.length > 0) return check
  const lost = report.calls.find(lostWrite)
  if (!lost) return { ...check, detail: `${check.detail}; no effect was reported in this run` }
  const evidence = `no effect was reported in this run, yet call ${lost.id} (${lost.route}) lost its answer after its upstream answered it (${lost.fault ?? lost.kind ?? 'after-commit'})`
  return { ...check, passed: false, detail: `${check.detail}, but ${evidence}: the tool side reports no commits, so none could be judged. Report each commit (reportEffect, docs/contracts.md#reporting-effects)` }
}
