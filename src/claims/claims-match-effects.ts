import { defineContractUnit, withEffectEvidence } from '../engine/contracts/check.js'
import type { ReportClaim } from '../engine/schema/claim-schema.js'
import type { Report } from '../engine/schema/report.js'
import { contradicted, rejudgeClaims } from './claim-verdict.js'

/**
 * What a pass could not check, said beside it: no claim at all (spans that became none), or claims
 * nothing could verify (nothing committed under them, on tools not known to commit). An account
 * that was never given, or never checked, must not read as one that held.
 */
function unjudged(report: Pick<Report, 'spans'>, claims: readonly ReportClaim[]): string {
  if (claims.length === 0) {
    const spans = report.spans ? `: ${report.spans.received} span(s) came, none a tool call's` : ''
    return `; no claim was reported${spans}, so the agent's account was not checked (docs/claims.md)`
  }
  const unverified = claims.filter((claim) => claim.verdict === 'unverified').length
  return unverified === 0 ? '' : `; ${unverified === claims.length ? 'all' : unverified} unverified (nothing committed under them, on tools not known to commit: declare them in "commits")`
}

/**
 * What the agent said about each tool call agrees with what committed (docs/claims.md): no
 * `silent_commit` (it reported failure, yet an effect committed) and no `phantom_success` (it
 * reported success on a tool that commits, and nothing did). `unverified` claims do not fail it.
 *
 * The verdicts are judged again from the report's trace (each claim's calls, the effects those
 * calls committed), never read from the verdict stored beside the claim.
 */
export const claimsMatchEffects = defineContractUnit<Record<string, never>>({
  type: 'claimsMatchEffects',
  explain: () => "the agent's claims match the committed effects",
  check(report) {
    const claims = rejudgeClaims(report)
    const wrong = claims.filter((claim) => contradicted(claim.verdict)).map((claim) => `#${claim.id} ${claim.tool} ${claim.status}: ${claim.verdict}`)
    const shown = wrong.slice(0, 5).join('; ') + (wrong.length > 5 ? `; and ${wrong.length - 5} more` : '')
    return [
      withEffectEvidence(report, {
        name: 'Claims match effects',
        passed: wrong.length === 0,
        detail: wrong.length === 0 ? `${claims.length} claim(s), none contradicted by the effects${unjudged(report, claims)}` : `${wrong.length} of ${claims.length} claim(s) contradicted by the effects (${shown})`,
      }),
    ]
  },
})
