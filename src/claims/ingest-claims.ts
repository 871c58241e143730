/**
 * Claims into runs: the spans of an OTLP export, or one claim posted directly. Each is redacted
 * and kept in its run through the run ledger (`addClaim`, whatever store keeps the run; spans and
 * their links in memory only) with the call window the join needs.
 *
 * A span names its run with the attribute `toolstorm.run` (on the span, or on its resource:
 * `OTEL_RESOURCE_ATTRIBUTES=toolstorm.run=<id>`); without one it goes to the run whose requests
 * carried its trace id, else to the active run (`PUT /active-run`), else `default`. A named run
 * this storm does not know (no call, no rules of its own, not the active run) is not created: the
 * claim goes where an unnamed one would, so a stray or mistyped id cannot hide claims in a run
 * nobody reports.
 */
import type { RunLedger } from '../engine/ledger/run-ledger.js'
import { RUN_ID, type Run } from '../engine/run.js'
import type { Storm } from '../engine/storm.js'
import type { ClaimStatus } from '../engine/schema/claim-schema.js'
import type { OtlpSpan } from './otlp-span.js'
import type { StoredClaim } from '../engine/run-claims.js'
import { spanClaim } from './span-claim.js'

/** Seconds of slack between the agent's span times and toolstorm's call times (one machine, two clocks). */
const CLOCK_SLACK_SECONDS = 0.05

export interface SpanIngest {
  /** Spans that became claims. */
  readonly claims: number
  /** Spans that are not tool calls: counted, their parent links kept. */
  readonly ignored: number
  /** Spans refused because their run already holds 10,000 claims. */
  readonly rejected: number
}

/** Keep the claims among `spans`, and every span's parent link, in their runs. */
export function ingestSpans(storm: Storm, spans: readonly OtlpSpan[]): SpanIngest {
  let claims = 0
  let ignored = 0
  let rejected = 0
  for (const span of spans) {
    const run = storm.run(runOfSpan(storm, span))
    const held = run.claims
    held.spans.received++
    if (span.parentSpanId !== null) held.link(span.spanId, span.parentSpanId)
    const claim = spanClaim(span)
    if (!claim) {
      held.spans.ignored++
      ignored++
      continue
    }
    const window = callWindow(storm, run, span)
    const { redactor } = storm
    const stored = storm.ledger.keepClaim(run, { ...claim, tool: redactor.text(claim.tool), toolCallId: claim.toolCallId === null ? null : redactor.text(claim.toolCallId), source: 'otlp', traceId: span.traceId, spanId: span.spanId, ...window })
    if (stored) {
      held.spans.claims++
      claims++
    } else rejected++
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

function runOfSpan(storm: Storm, span: OtlpSpan): string {
  const named = span.attributes.get('toolstorm.run') ?? span.resourceRun
  // Routed as a claim posted directly is (memory-ledger.ts `claimRun`).
  return storm.ledger.claimRun(typeof named === 'string' && RUN_ID.test(named) ? named : undefined, span.traceId)
}

/**
 * The calls a span's claim may speak for, by time: with real time, those that started while the
 * span was open; with a virtual clock (span times are real), every call made before it arrived.
 */
function callWindow(storm: Storm, run: Run, span: OtlpSpan): { upTo: number; after: number } {
  if (storm.clock.kind !== 'real' || !(span.endMs > 0) || !(span.startMs > 0)) return { upTo: run.callCount, after: 0 }
  // RealClock reads performance.now(): seconds since performance.timeOrigin.
  const toRun = (epochMs: number) => (epochMs - performance.timeOrigin) / 1000 - run.start
  const start = toRun(span.startMs) - CLOCK_SLACK_SECONDS
  const end = toRun(span.endMs) + CLOCK_SLACK_SECONDS
  let upTo = 0
  let after = 0
  for (const call of run.calls) {
    if (call.started <= end) upTo = call.id
    if (call.started < start) after = call.id
  }
  // Calls past the itemized limit are not listed: the span may speak for all of them.
  if (run.droppedCalls > 0 && upTo === run.calls.length) upTo = run.callCount
  return { upTo, after }
}
