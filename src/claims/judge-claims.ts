/**
 * The join and the verdicts: which calls each claim speaks for, which effects those calls
 * committed, and whether the claim holds. A pure function of the run's claims, calls and effects,
 * run each time a report is made (effects reported after a claim still count).
 *
 * - **By trace context** (`join: "trace"`): a claim with a span covers the calls made under that
 *   span or any of its descendants (a call's `traceparent` names the span it was sent under; the
 *   spans an OTLP export brought link children to parents).
 * - **By tool and order** (`join: "order"`): otherwise, a claim covers the calls on its tool
 *   (route `tool`, `tools/call <tool>`, or `METHOD /path` when it names one) made after the previous
 *   claim on that tool, up to the claim (calls already under a traced claim are left out).
 *
 * @see docs/claims.md
 */
import { globMatches } from '../engine/glob.js'
import type { ReportClaim } from '../engine/schema/claim-schema.js'
import type { CommitKnowledge, JudgeInput } from '../engine/evidence/claims-judge.js'
import { verdictOf } from './claim-verdict.js'

/** Ancestors followed from a call's span before giving up (a cycle in hostile input ends there too). */
const MAX_DEPTH = 256

type JoinCall = JudgeInput['calls'][number]

/** Every claim of the run, in the order received, with its calls, effects and verdict. */
export function judgeClaims(input: JudgeInput): ReportClaim[] {
  const { claims, spanParents, calls } = input
  const covered = new Map<number, readonly JoinCall[]>()
  const traced = new Set<number>()
  const traceJoined = new Set<number>()
  const byTrace = new Map<string, JoinCall[]>()
  for (const call of calls) {
    if (!call.trace) continue
    const list = byTrace.get(call.trace.traceId)
    if (list) list.push(call)
    else byTrace.set(call.trace.traceId, [call])
  }
  for (const claim of claims) {
    if (claim.traceId === null || claim.spanId === null) continue
    const under = (byTrace.get(claim.traceId) ?? []).filter((call) => isUnder(call.trace!.parentSpanId, claim.spanId as string, spanParents))
    if (under.length === 0) continue
    covered.set(claim.id, under)
    traceJoined.add(claim.id)
    for (const call of under) traced.add(call.id)
  }
  // The order join, tool by tool: each claim takes the calls since the previous claim on its tool.
  const lastUpTo = new Map<string, number>()
  const ordered = claims.filter((claim) => !covered.has(claim.id)).sort((a, b) => a.upTo - b.upTo || a.id - b.id)
  for (const claim of ordered) {
    const after = Math.max(lastUpTo.get(claim.tool) ?? 0, claim.after)
    covered.set(claim.id, calls.filter((call) => call.id > after && call.id <= claim.upTo && !traced.has(call.id) && onTool(call, claim.tool)))
    lastUpTo.set(claim.tool, Math.max(lastUpTo.get(claim.tool) ?? 0, claim.upTo))
  }
  const effectsByCall = new Map<number, Array<{ name: string; key: string; call: number }>>()
  for (const effect of input.effects) {
    const list = effectsByCall.get(effect.call)
    const entry = { name: effect.name, key: effect.key, call: effect.call }
    if (list) list.push(entry)
    else effectsByCall.set(effect.call, [entry])
  }
  return claims.map((claim) => {
    const its = covered.get(claim.id) ?? []
    const effects = its.flatMap((call) => effectsByCall.get(call.id) ?? [])
    const commits = toolCommits(claim.tool, its, input.commits)
    return {
      id: claim.id,
      tool: claim.tool,
      toolCallId: claim.toolCallId,
      status: claim.status,
      verdict: verdictOf(claim.status, effects.length > 0, commits),
      join: traceJoined.has(claim.id) ? 'trace' : 'order',
      source: claim.source,
      at: claim.at,
      traceId: claim.traceId,
      spanId: claim.spanId,
      calls: its.map((call) => call.id),
      effects,
      commits,
    }
  })
}

/** Whether `spanId` is `ancestor` or one of its descendants, by the links the run holds. */
function isUnder(spanId: string, ancestor: string, parents: ReadonlyMap<string, string>): boolean {
  let current: string | undefined = spanId
  for (let depth = 0; current !== undefined && depth < MAX_DEPTH; depth++) {
    if (current === ancestor) return true
    current = parents.get(current)
  }
  return false
}

/** Whether a call was a call of `tool`: its route, its MCP tool, or its `METHOD /path`. */
function onTool(call: JoinCall, tool: string): boolean {
  if (call.route === tool || call.route === `tools/call ${tool}`) return true
  if (call.mcp?.method === 'tools/call' && call.mcp.tool === tool) return true
  return tool.includes(' ') && pathNameOf(call) === tool
}

function pathNameOf(call: JoinCall): string | null {
  try {
    return `${call.method.toUpperCase()} ${new URL(call.url, 'http://toolstorm.invalid').pathname}`
  } catch {
    return null
  }
}

/** Whether the claim's tool is known to commit: by its name, or by a route of its calls. */
function toolCommits(tool: string, calls: readonly JoinCall[], knowledge: CommitKnowledge): boolean {
  const names = [tool, `tools/call ${tool}`]
  for (const call of calls) {
    names.push(call.route)
    const path = pathNameOf(call)
    if (path !== null) names.push(path)
  }
  return names.some((name) => knowledge.observed.has(name) || knowledge.globs.some((glob) => globMatches(glob, name)))
}
