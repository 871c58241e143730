/**
 * Why a run is worth keeping: something went wrong in it. Seen on each exchange as it is recorded
 * (an upstream 5xx, an upstream reset or timeout, a fault that fired), on the run's report when it
 * ends (an effect committed twice, a claim its effects contradict), or said from outside (a contract
 * that failed on it, `POST /incidents`). OpenTelemetry's tail sampling keeps a trace on its status
 * once it ended; here the unit is the run, and the policies are these.
 */
import type { CassetteExchange } from '../cassette/format/cassette-schema.js'
import { duplicateEffects } from '../engine/contracts/duplicate-effects.js'
import type { Report } from '../engine/schema/report.js'

export const INCIDENT_REASONS = ['upstream_error', 'upstream_failure', 'fault', 'duplicate_effect', 'claim_contradicted', 'contract_failed', 'marked'] as const
export type IncidentReason = (typeof INCIDENT_REASONS)[number]

/** One reason with what shows it (a call, a status, an effect key), for the index and the report. */
export interface IncidentTrigger {
  readonly why: IncidentReason
  readonly detail: string
}

/** Codes of a client that went away: not the upstream's doing. */
const CLIENT_CODES = new Set(['CLIENT_ABORTED'])

/** What one finished exchange shows went wrong (none for a healthy one). */
export function exchangeTriggers(exchange: CassetteExchange): IncidentTrigger[] {
  const call = exchange.call === null ? `a refused ${exchange.route}` : `call ${exchange.call} (${exchange.route})`
  if (exchange.fault?.injected) return [{ why: 'fault', detail: `${call}: fault ${exchange.fault.kind} (rule "${exchange.fault.rule}")` }]
  const triggers: IncidentTrigger[] = []
  // The upstream's own status (a status the proxy made for an upstream that failed is that failure, below).
  const upstream = exchange.upstream?.status ?? (exchange.executed && exchange.error === null ? exchange.response?.status : undefined)
  if (upstream !== undefined && upstream >= 500) triggers.push({ why: 'upstream_error', detail: `${call}: the upstream answered ${upstream}` })
  if (exchange.error !== null && !CLIENT_CODES.has(exchange.error)) triggers.push({ why: 'upstream_failure', detail: `${call}: ${exchange.outcome === 'reset' ? 'reset' : 'failed'} (${exchange.error})` })
  else if (exchange.outcome === 'reset') triggers.push({ why: 'upstream_failure', detail: `${call}: the connection was reset` })
  return triggers
}

/** What the run's report shows went wrong, once it ended: effects committed twice, contradicted claims. */
export function reportTriggers(report: Report): IncidentTrigger[] {
  const triggers: IncidentTrigger[] = []
  for (const duplicate of duplicateEffects(report).slice(0, 10)) {
    triggers.push({ why: 'duplicate_effect', detail: `${duplicate.name} key ${JSON.stringify(duplicate.key)} committed ${duplicate.count} times (calls ${duplicate.calls.join(', ')})` })
  }
  for (const claim of report.claims ?? []) {
    if (claim.verdict === 'silent_commit' || claim.verdict === 'phantom_success') triggers.push({ why: 'claim_contradicted', detail: `claim ${claim.id} (${claim.tool}, ${claim.status}): ${claim.verdict}` })
  }
  return triggers
}
