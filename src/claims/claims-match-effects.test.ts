import { describe, expect, it } from 'vitest'
import { createStorm } from '../create-storm.js'
import type { ReportClaim } from '../engine/schema/claim-schema.js'
import { claimsMatchEffects } from './claims-match-effects.js'

const empty = createStorm({}).report()

function claim(id: number, status: ReportClaim['status'], commits: boolean): ReportClaim {
  return { id, tool: 'create_shipment', toolCallId: null, status, verdict: 'unverified', join: 'order', source: 'api', at: 0.1, traceId: null, spanId: null, calls: [], effects: [], commits }
}

describe('claimsMatchEffects', () => {
  it('says a pass checked nothing when no claim was reported, and whether spans came that none became', () => {
    expect(claimsMatchEffects.check(empty, {})[0]).toMatchObject({ passed: true, detail: "0 claim(s), none contradicted by the effects; no claim was reported, so the agent's account was not checked (docs/claims.md); no effect was reported in this run" })
    const spans = { ...empty, spans: { received: 3, claims: 0, ignored: 3 } }
    expect(claimsMatchEffects.check(spans, {})[0]!.detail).toContain("no claim was reported: 3 span(s) came, none a tool call's, so the agent's account was not checked")
  })

  it('says how many claims nothing could verify, and passes claims the effects confirm without a word', () => {
    const unverified = { ...empty, claims: [claim(1, 'success', false), claim(2, 'failure', false)] }
    expect(claimsMatchEffects.check(unverified, {})[0]!.detail).toMatch(/^2 claim\(s\), none contradicted by the effects; all unverified \(nothing committed under them, on tools not known to commit: declare them in "commits"\)/)
    const mixed = { ...empty, claims: [claim(1, 'failure', true), claim(2, 'success', false)] }
    expect(claimsMatchEffects.check(mixed, {})[0]!.detail).toMatch(/^2 claim\(s\), none contradicted by the effects; 1 unverified /)
    const confirmed = { ...empty, claims: [claim(1, 'failure', true)] }
    expect(claimsMatchEffects.check(confirmed, {})[0]!.detail).toBe('1 claim(s), none contradicted by the effects; no effect was reported in this run')
  })
})
