/**
 * Claims: what the agent concluded about a tool call ("the shipment was created", "I could not
 * create it"), as it reported it (OTLP spans, `POST /claims`, `reportClaim()`), held against the
 * effects the tool side committed. The report lists each claim with its verdict.
 *
 * Only the fields named here are ever stored: a span's other attributes (tool arguments and
 * results, prompts) never reach a report, cassette or page.
 *
 * @see docs/claims.md
 */
import { z } from 'zod'

export const CLAIM_STATUSES = ['success', 'failure'] as const
export type ClaimStatus = (typeof CLAIM_STATUSES)[number]

/**
 * - `confirmed`: the effects agree with the claim (a success whose effect committed; a failure of
 *   a tool that commits, and nothing committed under it).
 * - `silent_commit`: the agent reported failure, yet an effect committed under the claim.
 * - `phantom_success`: the agent reported success, yet nothing committed under it, and its tool commits.
 * - `unverified`: no evidence either way (nothing committed, and the tool is not known to commit).
 */
export const CLAIM_VERDICTS = ['confirmed', 'silent_commit', 'phantom_success', 'unverified'] as const
export type ClaimVerdict = (typeof CLAIM_VERDICTS)[number]

/** How a claim found its calls: by trace context, or by tool name and order within the run. */
export const CLAIM_JOINS = ['trace', 'order'] as const
export type ClaimJoin = (typeof CLAIM_JOINS)[number]

/** Where a claim came from: an OTLP span, or `POST /claims` (`reportClaim()`, `report_claim()`). */
export const CLAIM_SOURCES = ['otlp', 'api'] as const
export type ClaimSource = (typeof CLAIM_SOURCES)[number]

const traceId = z.string().regex(/^[0-9a-f]{32}$/, { error: 'expected a trace id (32 lowercase hex digits)' })
const spanId = z.string().regex(/^[0-9a-f]{16}$/, { error: 'expected a span id (16 lowercase hex digits)' })

/** The trace context of a call (`calls[].trace`): the request's `traceparent`, or its MCP `params._meta.traceparent`. */
export const callTraceSchema = z.strictObject({
  traceId,
  /** The span the request was sent under. */
  parentSpanId: spanId,
})

/** One claim in a report, with what it was joined to and the verdict. */
export const reportClaimSchema = z.strictObject({
  /** Position among the run's claims, from 1, in the order toolstorm received them. */
  id: z.int().min(1),
  /** The tool the agent called (redacted). */
  tool: z.string().min(1).max(200),
  /** The agent's id for the tool call (`gen_ai.tool.call.id`, `ai.toolCall.id`), redacted; null when it gave none. */
  toolCallId: z.string().min(1).max(200).nullable(),
  /** What the agent concluded. */
  status: z.enum(CLAIM_STATUSES),
  verdict: z.enum(CLAIM_VERDICTS),
  join: z.enum(CLAIM_JOINS),
  source: z.enum(CLAIM_SOURCES),
  /** Seconds since the run started when toolstorm received the claim. */
  at: z.number().min(0),
  traceId: traceId.nullable(),
  spanId: spanId.nullable(),
  /** The calls behind the claim (made under its span, or on its tool since its previous claim). */
  calls: z.array(z.int().min(1)).max(10_000),
  /** The effects those calls committed: name and key as the report's `effects` hold them. */
  effects: z.array(z.strictObject({ name: z.string().min(1), key: z.string().min(1), call: z.int().min(1) })).max(10_000),
  /** Whether the claim's tool is known to commit (the rules file's `commits`, or an effect seen on its route). */
  commits: z.boolean(),
})

export type ReportClaim = z.infer<typeof reportClaimSchema>
export type CallTrace = z.infer<typeof callTraceSchema>

/**
 * How many spans OTLP exports brought to the run (`spans` in a report): tool-call spans became
 * claims, the others were counted and ignored (their parent links still join descendants).
 */
export const spanCountsSchema = z.strictObject({ received: z.int().min(0), claims: z.int().min(0), ignored: z.int().min(0) })
export type SpanCounts = z.infer<typeof spanCountsSchema>
