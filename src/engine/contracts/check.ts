/**
 * The pluggable contract unit: one file per check family, registered by `type`.
 * A unit reads only the report, so contracts run the same on a live run, a saved report or a
 * cassette.
 */
import type { Report } from '../schema/report.js'

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

/**
 * A check on effects cannot pass when effect reports were refused while the run was kept (a commit
 * may be missing from its effects): failed then, its detail saying so.
 */
export function withRefusedEffects(report: Pick<Report, 'refusedEffects'>, check: Check): Check {
  const refused = report.refusedEffects
  if (!refused) return check
  return { ...check, passed: false, detail: `${check.detail}, but ${refused.count} effect report(s) were refused while the run was kept, so its effects may be incomplete (first: ${refused.first})` }
}
