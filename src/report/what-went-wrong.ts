/**
 * What went wrong in a run, read off its calls and its report: the policies the flight recorder
 * keeps a run on (src/incidents), `inspect --runs` gives a verdict by, and `--failed` filters on.
 * A fault that fired, an upstream 5xx, an upstream reset or timeout (the proxy's status for an
 * upstream it could not reach counts as that failure, not as the upstream's answer), an effect
 * committed twice, effect reports refused (the run's effects may be incomplete: the contracts on
 * effects fail it), a claim its effects contradict.
 */
import { duplicateEffects } from '../engine/contracts/duplicate-effects.js'
import type { CallRecord, Report } from '../engine/schema/report.js'
import { contradicted, rejudgeClaims } from '../claims/claim-verdict.js'

export const WRONG_REASONS = ['upstream_error', 'upstream_failure', 'fault', 'duplicate_effect', 'effects_refused', 'claim_contradicted', 'contract_failed', 'marked'] as const
export type WrongReason = (typeof WRONG_REASONS)[number]

/** One reason with what shows it (a call and a status, an effect key). */
export interface WhatWentWrong {
  readonly why: WrongReason
  readonly detail: string
}

/** What a call shows of it: a report's call record, or the same fields of a cassette exchange. */
export type CallView = Pick<CallRecord, 'route' | 'outcome' | 'executed' | 'error' | 'upstreamStatus' | 'fault' | 'kind' | 'injected'> & { readonly id: number | null }

/** Codes of a client that went away: not the upstream's doing. */
const CLIENT_CODES = new Set(['CLIENT_ABORTED'])

/** What one finished call shows went wrong (none for a healthy one). */
export function callWentWrong(call: CallView): WhatWentWrong[] {
  const label = call.id === null ? `a refused ${call.route}` : `call ${call.id} (${call.route})`
  if (call.injected && call.kind) return [{ why: 'fault', detail: `${label}: fault ${call.kind} (rule "${call.fault}")` }]
  const wrong: WhatWentWrong[] = []
  const upstream = call.error === null ? call.upstreamStatus : null
  if (upstream !== null && upstream >= 500) wrong.push({ why: 'upstream_error', detail: `${label}: the upstream answered ${upstream}` })
  if (call.error !== null && !CLIENT_CODES.has(call.error)) wrong.push({ why: 'upstream_failure', detail: `${label}: ${call.outcome === 'reset' ? 'reset' : 'failed'} (${call.error})` })
  else if (call.outcome === 'reset') wrong.push({ why: 'upstream_failure', detail: `${label}: the connection was reset` })
  return wrong
}

/** What the report shows went wrong beyond single calls: effects committed twice, effect reports refused, contradicted claims. */
export function reportWentWrong(report: Pick<Report, 'effects' | 'claims'> & Partial<Pick<Report, 'refusedEffects'>>): WhatWentWrong[] {
  const wrong: WhatWentWrong[] = []
  for (const duplicate of duplicateEffects(report).slice(0, 10)) {
    wrong.push({ why: 'duplicate_effect', detail: `${duplicate.name} key ${JSON.stringify(duplicate.key)} committed ${duplicate.count} times (calls ${duplicate.calls.join(', ')})` })
  }
  // A commit may be missing, so toolstorm check fails the run (withEffectEvidence): a run that looks healthy is not.
  const refused = report.refusedEffects
  if (refused) wrong.push({ why: 'effects_refused', detail: `${refused.count} effect report(s) refused, its effects may be incomplete (first: ${refused.first})` })
  // Judged again from the trace: a verdict stored in a file is never taken on trust.
  for (const claim of rejudgeClaims(report)) {
    if (contradicted(claim.verdict)) wrong.push({ why: 'claim_contradicted', detail: `claim ${claim.id} (${claim.tool}, ${claim.status}): ${claim.verdict}` })
  }
  return wrong
}

/** Everything a run's report shows went wrong: its calls, then the report's own. */
export function runWentWrong(report: Report): WhatWentWrong[] {
  return [...report.calls.flatMap((call) => (call.outcome === 'running' ? [] : callWentWrong(call))), ...reportWentWrong(report)]
}
