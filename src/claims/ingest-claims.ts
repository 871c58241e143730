/**
 * Claims into runs: the spans of an OTLP export, or one claim posted directly. Each is redacted
 * and kept in its run through the run ledger (`addClaim`, `addSpans`: whatever store keeps the
 * run, the spans' parent links too), which gives it the calls it may speak for.
 *
 * A span names its run with the attribute `toolstorm.run` (on the span, or on its resource:
 * `OTEL_RESOURCE_ATTRIBUTES=toolstorm.run=<id>`, or on another span of its trace in the same
 * export); without one it goes to the run whose requests carried its trace id (in one process: a
 * shared store does not know which replica served a trace), else to the active run
 * (`PUT /active-run`), else `default`. A named run this storm does not know (no call, no rules of
 * its own, not the active run) is not created: the claim goes where an unnamed one would, so a
 * stray or mistyped id cannot hide claims in a run nobody reports.
 */
import type { RunLedger } from '../engine/ledger/run-ledger.js'
import { RUN_ID } from '../engine/run.js'
import type { Storm } from '../engine/storm.js'
import type { ClaimStatus } from '../engine/schema/claim-schema.js'
import type { OtlpSpan } from './otlp-span.js'
import type { SpanClaimInput, StoredClaim } from '../engine/run-claims.js'
import { spanClaim } from './span-claim.js'

export interface SpanIngest {
  /** Spans that became claims. */
  readonly claims: number
  /** Spans that are not tool calls: counted, their parent links kept. */
  readonly ignored: number
  /** Spans refused because their run already holds 10,000 claims. */
  readonly rejected: number
}

/**
 * Keep the claims among `spans`, and every span's parent link, in their runs (`ledger`: the
 * storm's, or a shared store's). Spans go in batches, one per run named and trace.
 */
export async function ingestSpans(storm: Storm, ledger: RunLedger, spans: readonly OtlpSpan[]): Promise<SpanIngest> {
  const { redactor } = storm
  // A span that names no run takes the run another span of its trace in this export names (the tool's span, say, and not its HTTP child).
  const traceRuns = new Map<string, string>()
  for (const span of spans) {
    const named = namedRun(span)
    if (named !== undefined && !traceRuns.has(span.traceId)) traceRuns.set(span.traceId, named)
  }
  const batches = new Map<string, { named: string | undefined; traceId: string; received: number; ignored: number; links: Array<[string, string]>; claims: SpanClaimInput[] }>()
  let claims = 0
  let ignored = 0
  for (const span of spans) {
    const named = namedRun(span) ?? traceRuns.get(span.traceId)
    const id = `${named ?? ''}\n${span.traceId}`
    let batch = batches.get(id)
    if (!batch) batches.set(id, (batch = { named, traceId: span.traceId, received: 0, ignored: 0, links: [], claims: [] }))
    batch.received++
    if (span.parentSpanId !== null) batch.links.push([span.spanId, span.parentSpanId])
    const claim = spanClaim(span)
    if (!claim) {
      batch.ignored++
      ignored++
      continue
    }
    batch.claims.push({ ...claim, tool: redactor.text(claim.tool), toolCallId: claim.toolCallId === null ? null : redactor.text(claim.toolCallId), source: 'otlp', traceId: span.traceId, spanId: span.spanId, startMs: span.startMs, endMs: span.endMs })
  }
  let rejected = 0
  for (const { named, traceId, ...batch } of batches.values()) {
    const kept = await ledger.addSpans(named, traceId, batch)
    rejected += kept.rejected
    claims += batch.claims.length - kept.rejected
  }
  return { claims, ignored, rejected }
}

/** A claim posted to `POST /claims` (already validated). */
export interface DirectClaim {
  readonly tool: string
  readonly status: ClaimStatus
  readonly toolCallId?: string | null | undefined
  readonly run?: string | undefined
  readonly traceId?: string | undefined
  readonly spanId?: string | undefined
}

/** Keep one claim, redacted, in its run (`run`, else its trace's run, else the active run). Throws `ERR_CLAIM_LIMIT` when the run is full. */
export function ingestClaim(storm: Storm, ledger: RunLedger, claim: DirectClaim): Promise<{ run: string; claim: StoredClaim }> {
  const { redactor } = storm
  return ledger.addClaim({
    tool: redactor.text(claim.tool),
    toolCallId: claim.toolCallId == null ? null : redactor.text(claim.toolCallId),
    status: claim.status,
    source: 'api',
    traceId: claim.traceId ?? null,
    spanId: claim.spanId ?? null,
    run: claim.run,
  })
}

/** The run a span names (`toolstorm.run` on it or its resource), if it is a run id. */
function namedRun(span: OtlpSpan): string | undefined {
  const named = span.attributes.get('toolstorm.run') ?? span.resourceRun
  return typeof named === 'string' && RUN_ID.test(named) ? named : undefined
}
