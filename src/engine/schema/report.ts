/**
 * The report: versioned JSON evidence of one run. Coverage and contracts are pure functions of it.
 */
import { z } from 'zod'
import { modelCallSchema } from './model-call.js'
import type { Rule, RuleSchema } from './rule.js'
import { seedSchema } from './rule-base.js'
import { callTraceSchema, reportClaimSchema, spanCountsSchema } from './claim-schema.js'

export const REPORT_KIND = 'toolstorm.report'

const seconds = z.number().min(0)
const counter = z.int().min(0)

export { modelCallSchema, type ModelCall } from './model-call.js'

export const coverageCountsSchema = z.strictObject({ eligible: counter, selected: counter, triggered: counter })

/**
 * Where an injected stream fault cut the stream: the complete SSE events (null for byte-level
 * `truncate`) and the body bytes the client received before the cut.
 */
export const cutSchema = z.strictObject({
  events: z.int().min(0).nullable(),
  bytes: z.int().min(0),
  /** A cut inside a model stream's deltas (`at: text | tool_arguments`): which kind. */
  at: z.enum(['text', 'tool_arguments']).optional(),
  /** How many deltas of that kind the client received before the cut. */
  deltas: z.int().min(0).optional(),
})

/**
 * An MCP message (docs/mcp.md): what was asked and what the client was answered. Ids and session
 * ids are the client's and the server's own; tool arguments are stored redacted, as bodies are.
 */
export const mcpCallSchema = z.strictObject({
  /** The JSON-RPC method (`tools/call`, `initialize`…). */
  method: z.string().min(1).max(100),
  /** The tool or prompt name, or the resource URI, for methods that name one; else null. */
  tool: z.string().nullable(),
  /** The JSON-RPC request id; null for a notification. */
  id: z.union([z.string(), z.number()]).nullable(),
  /** `Mcp-Session-Id`: the one the client sent, else the one the server assigned in its answer. */
  session: z.string().max(200).nullable(),
  /** The tool arguments, redacted; null when there were none or they were larger than 4 KiB as JSON. */
  arguments: z.json().nullable(),
  /**
   * What the client was answered: a `result`, a result with `isError: true`, a JSON-RPC `error`;
   * null when it received no JSON-RPC answer (a reset, an HTTP error, a notification's 202).
   */
  outcome: z.enum(['result', 'isError', 'error']).nullable(),
  /** The JSON-RPC error code when `outcome` is `error`. */
  errorCode: z.int().nullable(),
  /**
   * The call's earlier rounds, oldest first, when its answer was `input_required` and the client
   * called again with the input (revision 2026-07-28): one call, whose `id`, `arguments` and
   * `outcome` are its last round's. Absent for a call of one round.
   */
  rounds: z.array(z.strictObject({ id: z.union([z.string(), z.number()]), outcome: z.literal('input_required') })).max(100).optional(),
  /**
   * The request's `Mcp-Method` and `Mcp-Name` headers (revision 2026-07-28) when they disagree with
   * its body: the server refuses it (`-32020`); the call is routed by the body. Absent otherwise.
   */
  headerMismatch: z.strictObject({ method: z.string().max(100), name: z.string().max(200).nullable() }).optional(),
})

/** One call's record; `kinds` are the fault kinds its storm knows. */
export function callSchemaFor(kinds: readonly [string, ...string[]]) {
  return z.strictObject({
    id: z.int().min(1),
    route: z.string().min(1),
    ordinal: z.int().min(1),
    /** The invocation key after redaction (`#<ordinal>` unless the client sent `x-toolstorm-key`). */
    key: z.string().min(1),
    /** The call whose upstream made this request (it carried that call's `x-toolstorm-call`). */
    parent: z.int().min(1).nullable(),
    method: z.string().min(1),
    /** The request URL, redacted. */
    url: z.string(),
    started: seconds,
    /** Seconds from start to the end of the exchange; null while running. */
    elapsed: seconds.nullable(),
    /** How the exchange ended for the client. */
    outcome: z.enum(['response', 'reset', 'error', 'cancelled', 'running']),
    /** The HTTP status the client received; null when it received none. */
    status: z.int().min(100).max(599).nullable(),
    /** Whether the upstream received the request. */
    executed: z.boolean(),
    /** The upstream's own status, also when the client never saw it (a lost response). */
    upstreamStatus: z.int().min(100).max(599).nullable(),
    fault: z.string().nullable(),
    kind: z.enum(kinds).nullable(),
    phase: z.enum(['before-upstream', 'after-commit', 'on-response']).nullable(),
    injected: z.boolean(),
    /** Seconds the client was told to wait (`retry-after-ms` or `Retry-After`), injected or real. */
    retryAfter: seconds.nullable(),
    /** A stable code for transport failures (`ECONNRESET`, `UPSTREAM_UNREACHABLE`, `UPSTREAM_RESET`, `CLIENT_ABORTED`). */
    error: z.string().nullable(),
    /** Set when the call was a model call (see docs/streams.md). */
    model: modelCallSchema.nullable().optional(),
    /** Where an injected stream fault cut the stream (see `cutSchema`). */
    cut: cutSchema.nullable().optional(),
    /** Why the selected fault did not act on this call (`at: tool_arguments` on a stream without a tool call…). */
    notFired: z.string().max(300).nullable().optional(),
    /** Set when the call was an MCP message (see docs/mcp.md). */
    mcp: mcpCallSchema.nullable().optional(),
    /** The trace context the request carried (`traceparent`, or MCP's `params._meta.traceparent`); absent when none. */
    trace: callTraceSchema.optional(),
  })
}

export const effectSchema = z.strictObject({
  name: z.string().min(1),
  key: z.string().min(1),
  call: z.int().min(1),
  at: seconds,
  /** Per-run identity of the raw (name, key) pair, in first-seen order. */
  identity: z.int().min(1),
  redacted: z.boolean(),
})

/** Effect reports refused while the run was kept: contracts on effects cannot pass (docs/contracts.md#refused-effect-reports). */
export const refusedEffectsSchema = z.strictObject({ count: z.int().min(1), first: z.string().max(300) })

/** What recovering from one triggered fault cost (`engine/recovery.ts`). */
export const recoverySchema = z.strictObject({
  /** The faulted call's id. */
  call: z.int().min(1),
  rule: z.string().nullable(),
  route: z.string(),
  /** Whether the faulted route answered a success later in the run. */
  recovered: z.boolean(),
  /** Calls the run made after the fault, up to and including that success. */
  calls: counter,
  modelCalls: counter,
  inputTokens: counter,
  outputTokens: counter,
  /** Model calls among them answered in full without usage: their tokens are unknown. */
  unmeasured: counter.optional(),
  /** Seconds from the end of the faulted call to the end of the success; null when it never came. */
  seconds: seconds.nullable(),
})

/**
 * A set of rules calls began under before the rules were changed (`PUT /rules`, the dashboard's
 * editor): the calls with ids `from` to `to`. Only sets that calls began under are kept.
 */
function earlierRuleSetSchemaFor(ruleSchema: RuleSchema) {
  return z.strictObject({ from: z.int().min(1), to: z.int().min(1), rules: z.array(ruleSchema).max(100) })
}

/** The report of a storm whose rules are `ruleSchema`'s and fault kinds `kinds` (faults/fault-registry.ts builds it). */
export function reportSchemaFor(ruleSchema: RuleSchema, kinds: readonly [string, ...string[]]) {
  return z.strictObject({
    version: z.literal(1, { error: 'expected report version 1' }),
    kind: z.literal(REPORT_KIND),
    toolstorm: z.string(),
    run: z.string().min(1),
    seed: seedSchema,
    clock: z.string(),
    maxCalls: z.int().min(1).nullable(),
    routes: z.record(z.string(), z.string()),
    /** The rules in force at the end of the run (for calls after the last of `earlierRules`). */
    rules: z.array(ruleSchema).max(100),
    /**
     * The rules earlier calls began under, oldest first, when the rules changed during the run.
     * Absent when they never did. Coverage counts the rules of every set, by name.
     */
    earlierRules: z.array(earlierRuleSetSchemaFor(ruleSchema)).max(10_000).optional(),
    coverage: z.record(z.string(), coverageCountsSchema),
    calls: z.array(callSchemaFor(kinds)).max(10_000),
    /** Calls made after the itemized limit: counted in coverage and budgets, not listed. */
    droppedCalls: counter,
    effects: z.array(effectSchema).max(10_000),
    budgetRejections: counter,
    /**
     * Exchanges served while the shared state store (`--state`) was unreachable: answered 503, or
     * passed through untouched with `--state-unavailable=pass`. Absent when there were none.
     */
    stateUnavailable: counter.optional(),
    /** Effect reports refused while the run was kept, and why the first was; absent when none were. */
    refusedEffects: refusedEffectsSchema.optional(),
    /** What recovering from each triggered fault cost; absent when no fault triggered. */
    recovery: z.array(recoverySchema).max(10_000).optional(),
    /**
     * What the agent reported about its tool calls, each held against the effects committed under it
     * (docs/claims.md). Absent when the run received no claim.
     */
    claims: z.array(reportClaimSchema).max(10_000).optional(),
    /** Spans OTLP exports brought to the run: those that became claims, and those counted and ignored. Absent when none came. */
    spans: spanCountsSchema.optional(),
  })
}

export type ReportSchema = ReturnType<typeof reportSchemaFor>
export type Report = z.infer<ReportSchema>
export type CallRecord = z.infer<ReturnType<typeof callSchemaFor>>
export type EffectRecord = z.infer<typeof effectSchema>
export type RefusedEffects = z.infer<typeof refusedEffectsSchema>
export type RecoveryRecord = z.infer<typeof recoverySchema>
export type CoverageCounts = z.infer<typeof coverageCountsSchema>
export type EarlierRules = Array<{ from: number; to: number; rules: readonly Rule[] }>
export type McpCall = z.infer<typeof mcpCallSchema>
