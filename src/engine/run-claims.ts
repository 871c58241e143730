/**
 * One run's claims as received, before any join: what `Run` keeps beside its effects. The join
 * and the verdicts are computed when a report is made (`judgeClaims`), so an effect reported
 * after the claim still counts.
 */
import type { ClaimSource, ClaimStatus, SpanCounts } from './schema/claim-schema.js'

/** Claims one run keeps, as effects are bounded (10,000). */
export const MAX_CLAIMS = 10_000
/** Span parent links one run keeps (they join a claim's span to the requests made under its descendants). */
export const MAX_SPAN_LINKS = 50_000

/** A claim as the run keeps it: already redacted. */
export interface StoredClaim {
  readonly id: number
  readonly tool: string
  readonly toolCallId: string | null
  readonly status: ClaimStatus
  readonly source: ClaimSource
  /** Seconds since the run started when it was received. */
  readonly at: number
  readonly traceId: string | null
  readonly spanId: string | null
  /**
   * The last call of the run the claim can speak for (its span had ended by then, or it had
   * arrived): the order join gives it the calls on its tool after its previous claim, up to this one.
   */
  readonly upTo: number
  /** Calls up to this one began before the claim's span did (0 when unknown): the order join leaves them out. */
  readonly after: number
}

/** A claim an OTLP span makes (redacted), with when its span ran (epoch ms; 0 when unknown). */
export interface SpanClaimInput extends Pick<StoredClaim, 'tool' | 'toolCallId' | 'status' | 'source' | 'traceId' | 'spanId'> {
  readonly startMs: number
  readonly endMs: number
}

/** What one OTLP export brought one run: its spans counted, their parent links, and the claims among them. */
export interface SpanBatch {
  readonly received: number
  /** Spans that are not tool calls. */
  readonly ignored: number
  readonly links: ReadonlyArray<readonly [spanId: string, parentSpanId: string]>
  readonly claims: readonly SpanClaimInput[]
}

export class RunClaims {
  readonly claims: StoredClaim[] = []
  /** Span id → parent span id, for every span an OTLP export brought (tool calls or not). */
  readonly spanParents = new Map<string, string>()
  readonly spans: { received: number; claims: number; ignored: number } = { received: 0, claims: 0, ignored: 0 }

  get size(): number {
    return this.claims.length
  }

  /** Whether OTLP spans reached this run (the report then says how many). */
  get hasSpans(): boolean {
    return this.spans.received > 0
  }

  spanCounts(): SpanCounts {
    return { ...this.spans }
  }

  /** Keep a claim; false when the run already holds `MAX_CLAIMS`. */
  add(claim: Omit<StoredClaim, 'id'>): StoredClaim | null {
    if (this.claims.length >= MAX_CLAIMS) return null
    const stored = { ...claim, id: this.claims.length + 1 }
    this.claims.push(stored)
    return stored
  }

  /** Remember that `spanId`'s parent is `parentSpanId` (bounded: the oldest links are kept). */
  link(spanId: string, parentSpanId: string): void {
    if (this.spanParents.size < MAX_SPAN_LINKS || this.spanParents.has(spanId)) this.spanParents.set(spanId, parentSpanId)
  }
}
