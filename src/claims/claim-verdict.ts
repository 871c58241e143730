/**
 * What a claim's verdict means, from what committed under it (docs/claims.md): the rule a judge
 * applies (judge-claims.ts) and the claims contract applies again to a saved report.
 */
import type { EffectRecord } from '../engine/schema/report.js'
import type { ClaimVerdict, ReportClaim } from '../engine/schema/claim-schema.js'

/**
 * A saved report's claims with their verdicts judged again from its trace (each claim's calls,
 * the effects those calls committed), never taken from the verdict stored in the file: what
 * `claimsMatchEffects()` and `inspect` read.
 */
export function rejudgeClaims(report: { readonly claims?: readonly ReportClaim[] | undefined; readonly effects: readonly Pick<EffectRecord, 'call'>[] }): ReportClaim[] {
  const committedCalls = new Set(report.effects.map((effect) => effect.call))
  return (report.claims ?? []).map((claim) => ({ ...claim, verdict: verdictOf(claim.status, claim.calls.some((call) => committedCalls.has(call)), claim.commits) }))
}

/** Whether a verdict says the agent's account is wrong. */
export function contradicted(verdict: ClaimVerdict): boolean {
  return verdict === 'silent_commit' || verdict === 'phantom_success'
}

/** The verdict for a claimed status, given whether anything committed under it and whether its tool commits. */
export function verdictOf(status: 'success' | 'failure', committed: boolean, commits: boolean): ClaimVerdict {
  if (committed) return status === 'success' ? 'confirmed' : 'silent_commit'
  if (!commits) return 'unverified'
  return status === 'success' ? 'phantom_success' : 'confirmed'
}
