/**
 * Every effect named `effect` was committed after an approved answer from the approval `route`,
 * in the same run: a call on that route answered 2xx to the client (as the storm recorded it)
 * whose exchange ended before the effect's commit time. A fail-open guard that ships while the
 * approval service is down fails it; a fail-closed one that does not ship passes.
 */
import type { CallRecord, EffectRecord, Report } from '../schema/report.js'
import { defineContractUnit, withEffectEvidence } from './check.js'
import { unseenEffectName } from './at-most-effects.js'
import { callsOnRoute } from './calls-on-route.js'

/** Tolerance for timings rounded to microseconds. */
const EPSILON_SECONDS = 0.000002

/** Unapproved effects listed in text, at most; the rest are counted. */
const LISTED = 10

export interface UnapprovedEffect {
  readonly effect: EffectRecord
  /** The call that committed it. */
  readonly call: CallRecord | undefined
  /** The calls on the approval route before the commit, none of which answered 2xx. */
  readonly answers: readonly CallRecord[]
}

function approves(call: CallRecord, at: number): boolean {
  return call.outcome === 'response' && call.status !== null && call.status >= 200 && call.status < 300 && call.elapsed !== null && call.started + call.elapsed <= at + EPSILON_SECONDS
}

/** Every effect named `effect` with no approved answer from `route` before its commit, in order. */
export function unapprovedEffects(report: Pick<Report, 'calls' | 'effects' | 'routes'>, effect: string, route: string): UnapprovedEffect[] {
  const approvals = callsOnRoute(report, route)
  return report.effects
    .filter((committed) => committed.name === effect && !approvals.some((call) => approves(call, committed.at)))
    .map((committed) => ({
      effect: committed,
      call: report.calls.find((call) => call.id === committed.call),
      answers: approvals.filter((call) => call.started <= committed.at),
    }))
}

function answered(call: CallRecord): string {
  return `call ${call.id} ${call.outcome}${call.status === null ? '' : ` ${call.status}`}${call.injected && call.fault ? ` [${call.fault}]` : ''}`
}

/**
 * `shipment key "order-7" committed by call 3 (POST /ship) at 0.120s: no 2xx answer from "POST /approve"
 * before it (asked: call 2 response 503 [approval_down])`, one line each, bounded.
 */
export function formatUnapprovedEffects(unapproved: readonly UnapprovedEffect[], route: string): string[] {
  const lines = unapproved.slice(0, LISTED).map(({ effect, call, answers }) => {
    const by = call === undefined ? `call ${effect.call}` : `call ${call.id} (${call.route})`
    const asked = answers.length === 0 ? 'it never called that route before' : `asked: ${answers.map(answered).join(', ')}`
    return `${effect.name} key ${JSON.stringify(effect.key)} committed by ${by} at ${effect.at.toFixed(3)}s: no 2xx answer from ${JSON.stringify(route)} before it (${asked})`
  })
  if (unapproved.length > LISTED) lines.push(`… and ${unapproved.length - LISTED} more`)
  return lines
}

export const effectsRequireApproval = defineContractUnit<{ effect: string; route: string }>({
  type: 'effectsRequireApproval',
  explain: ({ effect, route }) => `every "${effect}" effect was approved by "${route}" first`,
  check(report, { effect, route }) {
    const name = `Approval required: ${effect}`
    // A redacted name cannot be matched reliably: fail closed, as atMostEffects does.
    if (report.effects.some((committed) => committed.redacted)) {
      return [{ name, passed: false, detail: 'Cannot match redacted effect identities; use nonsecret identifiers' }]
    }
    const total = report.effects.filter((committed) => committed.name === effect).length
    const missing = unapprovedEffects(report, effect, route)
    const first = missing[0]
    return [
      withEffectEvidence(report, {
        name,
        passed: missing.length === 0,
        detail:
          first === undefined
            ? `${total} "${effect}" effect(s), each after a 2xx answer from "${route}"${unseenEffectName(report, effect)}`
            : `${missing.length} of ${total} "${effect}" effect(s) committed without a 2xx answer from "${route}" before them (first: key ${JSON.stringify(first.effect.key)}, call ${first.effect.call})`,
      }),
    ]
  },
})
