/**
 * A span as an OTLP export request carries it, reduced to what claims need. Both decoders
 * (protobuf, JSON) produce it; nothing here is stored: `spanClaim` takes the named fields.
 */

/** A scalar attribute value; arrays and maps are not read (no attribute claims need is one). */
export type SpanAttribute = string | number | boolean

export interface OtlpSpan {
  /** 32 lowercase hex digits. */
  readonly traceId: string
  /** 16 lowercase hex digits. */
  readonly spanId: string
  readonly parentSpanId: string | null
  readonly name: string
  /** OTLP's SpanKind: 0 unspecified, 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  readonly kind: number
  /** Unix epoch milliseconds (OTLP sends nanoseconds). */
  readonly startMs: number
  readonly endMs: number
  readonly status: 'unset' | 'ok' | 'error'
  /** The span's scalar attributes that claims read (`CLAIM_ATTRIBUTES`). */
  readonly attributes: ReadonlyMap<string, SpanAttribute>
  /** The resource's `toolstorm.run`, when set (`OTEL_RESOURCE_ATTRIBUTES=toolstorm.run=<id>`). */
  readonly resourceRun: string | null
}

/** The attribute keys read from spans; every other attribute is skipped while decoding. */
export const CLAIM_ATTRIBUTES = new Set([
  'gen_ai.operation.name',
  'gen_ai.tool.name',
  'gen_ai.tool.call.id',
  'error.type',
  'mcp.method.name',
  'ai.toolCall.name',
  'ai.toolCall.id',
  'toolstorm.run',
])

/** Spans one export request may carry (the OpenTelemetry SDKs send at most 512 by default). */
export const MAX_SPANS_PER_REQUEST = 10_000

/** Epoch milliseconds from OTLP's nanoseconds (a decimal string, a number, or a protobuf Long). */
export function nanosToMillis(value: unknown): number {
  if (value === undefined || value === null || value === '') return 0
  const text = typeof value === 'object' ? String(value) : String(value)
  if (!/^\d{1,20}$/.test(text)) return Number.NaN
  return Number(BigInt(text) / 1_000_000n)
}

/** What each decoder found for one span, before the claim attributes are picked out. */
export interface DecodedSpanFields<KV> {
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId: string | null
  readonly name: string | undefined
  readonly kind: number | undefined
  readonly startTimeUnixNano: unknown
  readonly endTimeUnixNano: unknown
  readonly statusCode: unknown
  readonly attributes: readonly KV[] | undefined
  readonly resourceRun: SpanAttribute | null
}

/** The span both decoders produce: ids as given (lowercase hex), times in ms, only `CLAIM_ATTRIBUTES` kept. */
export function otlpSpan<KV extends { key?: string | undefined }>(fields: DecodedSpanFields<KV>, scalarOf: (kv: KV) => SpanAttribute | null): OtlpSpan {
  const attributes = new Map<string, SpanAttribute>()
  for (const kv of fields.attributes ?? []) {
    if (kv.key === undefined || !CLAIM_ATTRIBUTES.has(kv.key)) continue
    const value = scalarOf(kv)
    if (value !== null) attributes.set(kv.key, value)
  }
  return {
    traceId: fields.traceId,
    spanId: fields.spanId,
    parentSpanId: fields.parentSpanId,
    name: fields.name ?? '',
    kind: fields.kind ?? 0,
    startMs: nanosToMillis(fields.startTimeUnixNano),
    endMs: nanosToMillis(fields.endTimeUnixNano),
    status: statusOf(fields.statusCode),
    attributes,
    resourceRun: typeof fields.resourceRun === 'string' ? fields.resourceRun : null,
  }
}

/** SpanKind CLIENT: the caller's side of a request (an MCP client's `tools/call`). */
export const SPAN_KIND_CLIENT = 3

/** The status of a span from OTLP's `Status.code` (0 unset, 1 ok, 2 error). */
export function statusOf(code: unknown): OtlpSpan['status'] {
  return code === 2 ? 'error' : code === 1 ? 'ok' : 'unset'
}
