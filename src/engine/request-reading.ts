/**
 * What a plug-in read of a request before it begins (engine/plugin.ts `nameRequest`), so the
 * kernel can route and record a protocol it does not know: the route name, what the plug-in's own
 * hooks read of it on its view, its entry in the report, the trace context it carries and the
 * schema its answer should have.
 *
 * @example
 * // a gRPC-web plug-in: each method a route of its own, its trace context from the message
 * const reading: RequestReading = { route: 'grpc shipping.Ship/Create', traceparent: '00-…-01' }
 */
import type { JsonSchema, RequestDetails } from './http.js'
import type { CallRecord } from './schema/report.js'

/** A call's protocol entries in the report (`calls[].mcp`): the kernel's schema, filled by a plug-in. */
export type CallEvidence = Partial<Pick<CallRecord, 'mcp'>>

export interface RequestReading {
  /** The route the storm routes it by (MCP: `tools/call get_weather`), so its ordinals and draws are its own. Absent: the rules' routes name it. */
  readonly route?: string | undefined
  /** What the plug-in's hooks (faults, shapers, observers) read of the request: added to its view (`RequestView`). */
  readonly details?: RequestDetails | undefined
  /** Its entries in the call's report record, redacted; a fresh object for each request, as the plug-in's observer may complete it. */
  readonly evidence?: CallEvidence | undefined
  /** The trace context the message carries (MCP's `params._meta.traceparent`): it names the call's span before the `traceparent` header. */
  readonly traceparent?: string | undefined
  /** The `outputSchema` the tool it calls declared (faults that drift a tool's answer use it). */
  readonly outputSchema?: JsonSchema | null | undefined
  /**
   * The call this request is a further round of (MCP's `input_required` retry): the exchange (its
   * `x-toolstorm-call` id) of its last round. It joins that call, if it ended in the same run, with
   * its record, ordinal, key and rule instead of being a call of its own, and `evidence` replaces
   * the call's then; else it is a call of its own, with the reading's `evidence`.
   */
  readonly joins?: { readonly exchange: string; readonly evidence: CallEvidence } | undefined
}
