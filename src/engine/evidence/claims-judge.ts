/**
 * The kernel's hook for judging claims: it keeps a run's claims as received (run-claims.ts) and,
 * each time a report is made, hands them with the run's calls and effects to the judge its storm
 * was given (`StormOptions.judgeClaims`). The join and the verdicts are the claims plug-in's
 * (src/claims/judge-claims.ts), which `createStorm` from the package root passes.
 *
 * @see docs/extending.md
 */
import type { CallRecord, EffectRecord } from '../schema/report.js'
import type { ReportClaim } from '../schema/claim-schema.js'
import type { StoredClaim } from '../run-claims.js'

/** What says a tool commits: the rules file's `commits` globs, and routes an effect was seen on. */
export interface CommitKnowledge {
  /** Globs over route names (and `METHOD /path`), as rules' `route`. */
  readonly globs: readonly string[]
  /** Routes this storm has seen an effect committed on, in any run. */
  readonly observed: ReadonlySet<string>
}

/** What a judge weighs: one run's claims, its span links, calls and effects. */
export interface JudgeInput {
  readonly claims: readonly StoredClaim[]
  readonly spanParents: ReadonlyMap<string, string>
  readonly calls: readonly Pick<CallRecord, 'id' | 'route' | 'method' | 'url' | 'trace' | 'mcp'>[]
  readonly effects: readonly Pick<EffectRecord, 'name' | 'key' | 'call'>[]
  readonly commits: CommitKnowledge
}

/** Every claim of the run, in the order received, with its calls, effects and verdict. */
export type ClaimsJudge = (input: JudgeInput) => ReportClaim[]

/**
 * Claims as a storm without a judge reports them: as received, joined to no call, `unverified`
 * (no evidence was weighed either way). Still listed, so a report never hides what the agent said.
 */
export const unjudgedClaims: ClaimsJudge = ({ claims }) =>
  claims.map((claim) => ({
    id: claim.id,
    tool: claim.tool,
    toolCallId: claim.toolCallId,
    status: claim.status,
    verdict: 'unverified',
    join: 'order',
    source: claim.source,
    at: claim.at,
    traceId: claim.traceId,
    spanId: claim.spanId,
    calls: [],
    effects: [],
    commits: false,
  }))
