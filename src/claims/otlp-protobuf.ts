/**
 * OTLP/HTTP protobuf (`application/x-protobuf`, the Python SDK's default exporter): an
 * `ExportTraceServiceRequest` decoded by protobufjs.
 *
 * @note The OpenTelemetry JS packages no longer ship a decoder (since otlp-transformer 0.214 they
 * serialize with a writer of their own and read only the response), so the messages are declared
 * here for protobufjs, with the field numbers of opentelemetry-proto
 * (opentelemetry/proto/trace/v1/trace.proto, common/v1/common.proto, resource/v1/resource.proto,
 * collector/trace/v1/trace_service.proto). Only the fields claims read are declared: protobufjs
 * skips the others (events, links, trace state) while still checking that they are well formed.
 */
import protobuf from 'protobufjs/light.js'
import { ClaimError } from '../errors.js'
import { MAX_SPANS_PER_REQUEST, otlpSpan, type OtlpSpan, type SpanAttribute } from './otlp-span.js'

const repeated = (type: string, id: number) => ({ rule: 'repeated', type, id })

const root = protobuf.Root.fromJSON({
  nested: {
    ExportTraceServiceRequest: { fields: { resourceSpans: repeated('ResourceSpans', 1) } },
    ExportTraceServiceResponse: { fields: { partialSuccess: { type: 'ExportTracePartialSuccess', id: 1 } } },
    ExportTracePartialSuccess: { fields: { rejectedSpans: { type: 'int64', id: 1 }, errorMessage: { type: 'string', id: 2 } } },
    ResourceSpans: { fields: { resource: { type: 'Resource', id: 1 }, scopeSpans: repeated('ScopeSpans', 2) } },
    Resource: { fields: { attributes: repeated('KeyValue', 1) } },
    ScopeSpans: { fields: { spans: repeated('Span', 2) } },
    Span: {
      fields: {
        traceId: { type: 'bytes', id: 1 },
        spanId: { type: 'bytes', id: 2 },
        parentSpanId: { type: 'bytes', id: 4 },
        name: { type: 'string', id: 5 },
        kind: { type: 'int32', id: 6 },
        startTimeUnixNano: { type: 'fixed64', id: 7 },
        endTimeUnixNano: { type: 'fixed64', id: 8 },
        attributes: repeated('KeyValue', 9),
        status: { type: 'Status', id: 15 },
      },
    },
    Status: { fields: { message: { type: 'string', id: 2 }, code: { type: 'int32', id: 3 } } },
    KeyValue: { fields: { key: { type: 'string', id: 1 }, value: { type: 'AnyValue', id: 2 } } },
    AnyValue: {
      oneofs: { value: { oneof: ['stringValue', 'boolValue', 'intValue', 'doubleValue', 'arrayValue', 'kvlistValue', 'bytesValue'] } },
      fields: {
        stringValue: { type: 'string', id: 1 },
        boolValue: { type: 'bool', id: 2 },
        intValue: { type: 'int64', id: 3 },
        doubleValue: { type: 'double', id: 4 },
        arrayValue: { type: 'ArrayValue', id: 5 },
        kvlistValue: { type: 'KeyValueList', id: 6 },
        bytesValue: { type: 'bytes', id: 7 },
      },
    },
    ArrayValue: { fields: { values: repeated('AnyValue', 1) } },
    KeyValueList: { fields: { values: repeated('KeyValue', 1) } },
  },
})

const ExportTraceServiceRequest = root.lookupType('ExportTraceServiceRequest')
const ExportTraceServiceResponse = root.lookupType('ExportTraceServiceResponse')

interface DecodedKeyValue {
  key?: string
  value?: { stringValue?: string; boolValue?: boolean; intValue?: unknown; doubleValue?: number; value?: string }
}
interface DecodedSpan {
  traceId?: Uint8Array
  spanId?: Uint8Array
  parentSpanId?: Uint8Array
  name?: string
  kind?: number
  startTimeUnixNano?: unknown
  endTimeUnixNano?: unknown
  attributes?: DecodedKeyValue[]
  status?: { code?: number }
}
interface DecodedRequest {
  resourceSpans?: Array<{ resource?: { attributes?: DecodedKeyValue[] }; scopeSpans?: Array<{ spans?: DecodedSpan[] }> }>
}

/** The spans of a protobuf `ExportTraceServiceRequest`; throws `ERR_OTLP_INVALID` naming what is wrong. */
export function decodeOtlpProtobuf(bytes: Uint8Array): OtlpSpan[] {
  let message: DecodedRequest
  try {
    message = ExportTraceServiceRequest.decode(bytes) as unknown as DecodedRequest
  } catch (error) {
    throw invalid(`the body is not a protobuf ExportTraceServiceRequest (${(error as Error).message})`)
  }
  const spans: OtlpSpan[] = []
  for (const [r, resourceSpans] of (message.resourceSpans ?? []).entries()) {
    const resourceRun = scalarOf(resourceSpans.resource?.attributes?.find((kv) => kv.key === 'toolstorm.run'))
    for (const [s, scopeSpans] of (resourceSpans.scopeSpans ?? []).entries()) {
      for (const [i, span] of (scopeSpans.spans ?? []).entries()) {
        if (spans.length >= MAX_SPANS_PER_REQUEST) throw invalid(`more than ${MAX_SPANS_PER_REQUEST} spans in one request`)
        const where = `resourceSpans[${r}].scopeSpans[${s}].spans[${i}]`
        const traceId = idOf(span.traceId, 16, `${where}.traceId`)
        const spanId = idOf(span.spanId, 8, `${where}.spanId`)
        const parent = span.parentSpanId && span.parentSpanId.length > 0 ? idOf(span.parentSpanId, 8, `${where}.parentSpanId`) : null
        const fields = { traceId, spanId, parentSpanId: parent, name: span.name, kind: span.kind, startTimeUnixNano: span.startTimeUnixNano, endTimeUnixNano: span.endTimeUnixNano }
        spans.push(otlpSpan({ ...fields, statusCode: span.status?.code, attributes: span.attributes, resourceRun }, scalarOf))
      }
    }
  }
  return spans
}

/** A protobuf `ExportTraceServiceResponse`: empty on full success, else the rejected spans and why. */
export function encodeOtlpProtobufResponse(rejectedSpans: number, errorMessage: string): Uint8Array {
  const value = rejectedSpans > 0 || errorMessage !== '' ? { partialSuccess: { rejectedSpans, errorMessage } } : {}
  return ExportTraceServiceResponse.encode(ExportTraceServiceResponse.fromObject(value)).finish()
}

function idOf(bytes: Uint8Array | undefined, length: number, where: string): string {
  if (!bytes || bytes.length !== length) throw invalid(`${where}: expected ${length} bytes, got ${bytes?.length ?? 0}`)
  const hex = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex')
  if (/^0+$/.test(hex)) throw invalid(`${where}: expected a nonzero id`)
  return hex
}

function scalarOf(kv: DecodedKeyValue | undefined): SpanAttribute | null {
  const value = kv?.value
  if (!value) return null
  if (typeof value.stringValue === 'string' && value.value === 'stringValue') return value.stringValue
  if (typeof value.boolValue === 'boolean' && value.value === 'boolValue') return value.boolValue
  if (value.value === 'intValue' && value.intValue !== undefined && value.intValue !== null) return Number(String(value.intValue))
  if (typeof value.doubleValue === 'number' && value.value === 'doubleValue') return value.doubleValue
  return null
}

function invalid(reason: string): ClaimError {
  return new ClaimError('ERR_OTLP_INVALID', `Failed to read the OTLP trace export: ${reason}.`)
}
