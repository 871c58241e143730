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
