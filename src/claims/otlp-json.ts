/**
 * OTLP/HTTP JSON (`application/json`): an `ExportTraceServiceRequest` in the protobuf JSON mapping
 * OTLP specifies (lowerCamelCase keys, trace and span ids as hex, enums as integers, 64-bit
 * integers as numbers or decimal strings). Unknown fields are ignored, as the spec asks of receivers.
 */
import { z } from 'zod'
import { ClaimError } from '../errors.js'
import { formatIssues } from '../engine/schema/format-issues.js'
import { MAX_SPANS_PER_REQUEST, otlpSpan, type OtlpSpan, type SpanAttribute } from './otlp-span.js'

const hexId = (digits: number) =>
  z.string().regex(new RegExp(`^[0-9a-fA-F]{${digits}}$`), { error: `expected ${digits} hex digits` }).refine((id) => !/^0+$/.test(id), { error: 'expected a nonzero id' })
const nanos = z.union([z.string().regex(/^\d{1,20}$/, { error: 'expected nanoseconds as a decimal string' }), z.int().min(0)])
const anyValue = z.looseObject({
  stringValue: z.string().optional(),
  boolValue: z.boolean().optional(),
  intValue: z.union([z.string().regex(/^-?\d{1,20}$/), z.int()]).optional(),
  doubleValue: z.number().optional(),
})
const keyValue = z.looseObject({ key: z.string(), value: anyValue.optional() })
const span = z.looseObject({
  traceId: hexId(32),
  spanId: hexId(16),
  parentSpanId: z.union([hexId(16), z.literal('')]).optional(),
  name: z.string().max(10_000).default(''),
  kind: z.int().min(0).max(5).default(0),
  startTimeUnixNano: nanos.optional(),
  endTimeUnixNano: nanos.optional(),
  attributes: z.array(keyValue).optional(),
  status: z.looseObject({ code: z.int().min(0).max(2).optional() }).optional(),
})
const requestSchema = z.looseObject({
  resourceSpans: z
    .array(
      z.looseObject({
        resource: z.looseObject({ attributes: z.array(keyValue).optional() }).optional(),
        scopeSpans: z.array(z.looseObject({ spans: z.array(span).optional() })).optional(),
      }),
    )
    .optional(),
})

type KeyValue = z.infer<typeof keyValue>

/** The spans of an OTLP/JSON export request (already parsed JSON); throws `ERR_OTLP_INVALID` naming the field. */
export function decodeOtlpJson(document: unknown): OtlpSpan[] {
  const result = requestSchema.safeParse(document)
  if (!result.success) {
    const lines = formatIssues(result.error, document)
    throw new ClaimError('ERR_OTLP_INVALID', `Failed to read the OTLP trace export: ${lines[0]}${lines.length > 1 ? ` (and ${lines.length - 1} more)` : ''}.`, { details: lines.join('\n') })
  }
  const spans: OtlpSpan[] = []
  for (const resourceSpans of result.data.resourceSpans ?? []) {
    const run = scalarOf(resourceSpans.resource?.attributes?.find((kv) => kv.key === 'toolstorm.run'))
    for (const scopeSpans of resourceSpans.scopeSpans ?? []) {
      for (const item of scopeSpans.spans ?? []) {
        if (spans.length >= MAX_SPANS_PER_REQUEST) throw new ClaimError('ERR_OTLP_INVALID', `Failed to read the OTLP trace export: more than ${MAX_SPANS_PER_REQUEST} spans in one request.`)
        spans.push(
          otlpSpan(
            {
              traceId: item.traceId.toLowerCase(),
              spanId: item.spanId.toLowerCase(),
              parentSpanId: item.parentSpanId ? item.parentSpanId.toLowerCase() : null,
              name: item.name,
              kind: item.kind,
              startTimeUnixNano: item.startTimeUnixNano,
              endTimeUnixNano: item.endTimeUnixNano,
              statusCode: item.status?.code,
              attributes: item.attributes,
              resourceRun: run,
            },
            scalarOf,
          ),
        )
      }
    }
  }
  return spans
}

function scalarOf(kv: KeyValue | undefined): SpanAttribute | null {
  const value = kv?.value
  if (!value) return null
  if (value.stringValue !== undefined) return value.stringValue
  if (value.boolValue !== undefined) return value.boolValue
  if (value.intValue !== undefined) return Number(value.intValue)
  if (value.doubleValue !== undefined) return value.doubleValue
  return null
}
