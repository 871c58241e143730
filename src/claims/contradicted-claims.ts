/**
 * The claims a report's effects contradict, as `toolstorm check` prints them under the failed
 * "Claims match effects" contract (docs/claims.md).
 */
import { contradicted, rejudgeClaims } from './claim-verdict.js'
import type { ReportClaim } from '../engine/schema/claim-schema.js'
import type { EffectRecord } from '../engine/schema/report.js'

/**
 * One line per claim the effects contradict, naming the tool, the calls and the effect keys
 * (`#1 create_shipment failure: silent_commit (call 1; shipment "o-1")`), at most `limit`.
 */
export function formatContradictedClaims(report: { readonly claims?: readonly ReportClaim[] | undefined; readonly effects: readonly Pick<EffectRecord, 'call' | 'name' | 'key'>[] }, limit = 10): string[] {
  const wrong = rejudgeClaims(report).filter((claim) => contradicted(claim.verdict))
  const lines = wrong.slice(0, limit).map((claim) => {
    const calls = claim.calls.length === 0 ? 'no call' : `call${claim.calls.length > 1 ? 's' : ''} ${claim.calls.join(', ')}`
    const effects = report.effects.filter((effect) => claim.calls.includes(effect.call)).map((effect) => `${effect.name} ${JSON.stringify(effect.key)}`)
    return `#${claim.id} ${claim.tool} ${claim.status}: ${claim.verdict} (${calls}${effects.length ? `; ${effects.join(', ')}` : ''})`
  })
  if (wrong.length > limit) lines.push(`and ${wrong.length - limit} more`)
  return lines
}
