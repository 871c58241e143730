import { defineContractUnit, withEffectEvidence } from '../engine/contracts/check.js'
import { contradicted, rejudgeClaims } from './claim-verdict.js'

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
        detail: wrong.length === 0 ? `${claims.length} claim(s), none contradicted by the effects` : `${wrong.length} of ${claims.length} claim(s) contradicted by the effects (${shown})`,
      }),
    ]
  },
})
