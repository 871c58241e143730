/**
 * Claims from a real OpenTelemetry SDK: an agent that traces each tool call as a GenAI
 * `execute_tool` span, propagates `traceparent` on its HTTP request, and exports the spans with
 * the OTLP/HTTP exporters (protobuf and JSON) to the proxy's admin server. Real faults make the
 * agent's account and the tool's commits disagree; the report says how.
 */
import { SpanKind, SpanStatusCode, trace, ROOT_CONTEXT, defaultTextMapSetter, type Tracer } from '@opentelemetry/api'
import { W3CTraceContextPropagator } from '@opentelemetry/core'
import { OTLPTraceExporter as ProtoExporter } from '@opentelemetry/exporter-trace-otlp-proto'
import { OTLPTraceExporter as JsonExporter } from '@opentelemetry/exporter-trace-otlp-http'
import { CompressionAlgorithm } from '@opentelemetry/otlp-exporter-base'
import { NodeTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-node'
import { fetch as undiciFetch } from 'undici'
import { describe, expect, it } from 'vitest'
import { contract } from '../../src/contracts/contract.js'
import type { StormConfigInput } from '../../src/engine/schema/config.js'
import { startProxied, type Proxied } from '../helpers/proxied.js'
import { closing } from '../helpers/teardown.js'

const propagator = new W3CTraceContextPropagator()

type Protocol = 'http/protobuf' | 'http/json'

/** A tracer exporting to the proxy's admin server, its provider shut down when the case ends. */
function tracerFor(proxied: Proxied, protocol: Protocol): { tracer: Tracer; provider: NodeTracerProvider } {
  const options = { url: `${proxied.proxy.adminUrl}/v1/traces`, headers: { Authorization: `Bearer ${proxied.proxy.token}` } }
  const exporter = protocol === 'http/protobuf' ? new ProtoExporter(options) : new JsonExporter(options)
  const provider = closing(new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }))
  return { tracer: provider.getTracer('shipping-agent'), provider }
}

/** One tool call as an instrumented agent makes it: a span, `traceparent` on the request, ERROR when it failed. */
async function toolCall(tracer: Tracer, base: string, tool: string, callId: string, request: { method: string; path: string; body?: string }): Promise<'ok' | 'failed'> {
  const span = tracer.startSpan(`execute_tool ${tool}`, {
    kind: SpanKind.INTERNAL,
    attributes: { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': tool, 'gen_ai.tool.call.id': callId, 'gen_ai.tool.call.arguments': request.body ?? '' },
  })
  const headers: Record<string, string> = { 'content-type': 'application/json' }
  propagator.inject(trace.setSpan(ROOT_CONTEXT, span), headers, defaultTextMapSetter)
  try {
    const response = await undiciFetch(base + request.path, { method: request.method, headers, ...(request.body ? { body: request.body } : {}) })
    await response.text()
    if (!response.ok) throw new Error(`HTTP ${response.status}`)
    return 'ok'
  } catch (error) {
    span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error).message })
    span.setAttribute('error.type', (error as Error).name)
    return 'failed'
  } finally {
    span.end()
  }
}

const RULES: StormConfigInput = {
  seed: 7,
  commits: ['POST /ship'],
  rules: [
    { name: 'lost-ack', route: 'POST /ship', kind: 'response_lost', calls: [1] },
    { name: 'fake-ok', route: 'POST /ship', kind: 'replace', calls: [3], status: 201, replacement: { shipment: 99, order: 'o-3' } },
  ],
}

describe.each(['http/protobuf', 'http/json'] as const)('claims from an OTLP %s exporter', (protocol) => {
  it('holds each tool-call span against the commits under it: silent commit, confirmed, phantom success, unverified', async () => {
    const env = closing(await startProxied('reverse', RULES))
    const { tracer, provider } = tracerFor(env, protocol)
    const ship = (order: string) => ({ method: 'POST', path: '/ship', body: JSON.stringify({ order }) })
    // The agent's view: the first shipment failed (its answer was lost), the other two worked.
    expect(await toolCall(tracer, env.base, 'create_shipment', 'call_1', ship('o-1'))).toBe('failed')
    expect(await toolCall(tracer, env.base, 'create_shipment', 'call_2', ship('o-2'))).toBe('ok')
    expect(await toolCall(tracer, env.base, 'create_shipment', 'call_3', ship('o-3'))).toBe('ok')
    expect(await toolCall(tracer, env.base, 'lookup_item', 'call_4', { method: 'GET', path: '/items/sku-1' })).toBe('ok')
    await provider.forceFlush()
    // What happened: o-1 and o-2 committed; o-3 never reached the tool server.
    expect(env.upstream.commits).toEqual(['o-1', 'o-2'])

    const report = await env.report()
    expect(report.calls.every((call) => call.trace !== undefined)).toBe(true)
    expect(report.claims?.map((c) => [c.tool, c.toolCallId, c.status, c.verdict, c.join, c.source, c.calls, c.effects.map((e) => e.key)])).toEqual([
      ['create_shipment', 'call_1', 'failure', 'silent_commit', 'trace', 'otlp', [1], ['o-1']],
      ['create_shipment', 'call_2', 'success', 'confirmed', 'trace', 'otlp', [2], ['o-2']],
      ['create_shipment', 'call_3', 'success', 'phantom_success', 'trace', 'otlp', [3], []],
      ['lookup_item', 'call_4', 'success', 'unverified', 'trace', 'otlp', [4], []],
    ])
    expect(report.claims?.[0]?.traceId).toBe(report.calls[0]?.trace?.traceId)
    expect(report.spans).toEqual({ received: 4, claims: 4, ignored: 0 })
    // Only the named attributes are kept: the tool's arguments never reach the report.
    expect(JSON.stringify(report)).not.toContain('gen_ai.tool.call.arguments')
  })
})

describe('claims from OTLP, joined through the span tree', () => {
  it('finds the calls made under a child span (an instrumented HTTP client), names the run by attribute, and takes gzip', async () => {
    const env = closing(await startProxied('reverse', RULES))
    const options = { url: `${env.proxy.adminUrl}/v1/traces`, headers: { Authorization: `Bearer ${env.proxy.token}` }, compression: CompressionAlgorithm.GZIP }
    const provider = closing(new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(new ProtoExporter(options))] }))
    const tracer = provider.getTracer('shipping-agent')
    // The tool span, then the HTTP client span an auto-instrumentation opens under it: the request's
    // traceparent names the child, and only the exported parent link leads back to the claim.
    const tool = tracer.startSpan('execute_tool create_shipment', { attributes: { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': 'create_shipment', 'toolstorm.run': 'agent-1' } })
    const client = tracer.startSpan('POST', { kind: SpanKind.CLIENT }, trace.setSpan(ROOT_CONTEXT, tool))
    const headers: Record<string, string> = { 'x-toolstorm-run': 'agent-1' }
    propagator.inject(trace.setSpan(ROOT_CONTEXT, client), headers, defaultTextMapSetter)
    await expect(undiciFetch(`${env.base}/ship`, { method: 'POST', headers, body: '{"order":"o-9"}' })).rejects.toThrow('fetch failed')
    client.setStatus({ code: SpanStatusCode.ERROR })
    client.end()
    tool.setStatus({ code: SpanStatusCode.ERROR })
    tool.end()
    await provider.forceFlush()
    const report = await env.report('agent-1')
    expect(report.calls[0]?.trace?.parentSpanId).toBe(client.spanContext().spanId)
    expect(report.claims?.map((c) => [c.tool, c.verdict, c.join, c.calls, c.spanId])).toEqual([['create_shipment', 'silent_commit', 'trace', [1], tool.spanContext().spanId]])
    expect(report.spans).toEqual({ received: 2, claims: 1, ignored: 1 })
    expect((await env.report()).claims).toBeUndefined()
  })

  it('holds a tool span that names no tool against the calls under it: its failure over a commit is a silent commit', async () => {
    const env = closing(await startProxied('reverse', RULES))
    const { tracer, provider } = tracerFor(env, 'http/protobuf')
    // An instrumentation that marks the span a tool call but leaves out gen_ai.tool.name (and the name from the span's).
    const span = tracer.startSpan('execute_tool', { attributes: { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.call.id': 'call_1' } })
    const headers: Record<string, string> = {}
    propagator.inject(trace.setSpan(ROOT_CONTEXT, span), headers, defaultTextMapSetter)
    await expect(undiciFetch(`${env.base}/ship`, { method: 'POST', headers, body: '{"order":"o-1"}' })).rejects.toThrow('fetch failed')
    span.setStatus({ code: SpanStatusCode.ERROR })
    span.end()
    await provider.forceFlush()
    expect(env.upstream.commits).toEqual(['o-1'])
    const report = await env.report()
    expect(report.claims?.map((c) => [c.tool, c.toolCallId, c.status, c.verdict, c.join, c.calls])).toEqual([['(unnamed tool)', 'call_1', 'failure', 'silent_commit', 'trace', [1]]])
    expect(report.spans).toEqual({ received: 1, claims: 1, ignored: 0 })
    expect(contract(report).claimsMatchEffects().checks[0]).toMatchObject({ passed: false, detail: '1 of 1 claim(s) contradicted by the effects (#1 (unnamed tool) failure: silent_commit)' })
  })

  it('sends a span naming a run toolstorm never saw to the default run', async () => {
    const env = closing(await startProxied('reverse', RULES))
    const { tracer, provider } = tracerFor(env, 'http/json')
    const span = tracer.startSpan('execute_tool lookup_item', { attributes: { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': 'lookup_item', 'toolstorm.run': 'no-such-run' } })
    span.end()
    await provider.forceFlush()
    expect(env.proxy.storm.runIds()).not.toContain('no-such-run')
    expect((await env.report()).claims?.map((c) => [c.tool, c.verdict])).toEqual([['lookup_item', 'unverified']])
  })
})

describe('the OTLP endpoint', () => {
  it('refuses an export without the admin token (401) and stores nothing', async () => {
    const env = closing(await startProxied('reverse', RULES))
    const response = await fetch(`${env.proxy.adminUrl}/v1/traces`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })
    expect(response.status).toBe(401)
    expect(env.proxy.storm.report().spans).toBeUndefined()
  })

  it('answers 400 with the JSON error body to a malformed export, stores nothing, and keeps serving', async () => {
    const env = closing(await startProxied('reverse', RULES))
    const post = (type: string, body: string | Uint8Array) => env.admin('/v1/traces', { method: 'POST', headers: { 'content-type': type }, body })
    const garbage = await post('application/x-protobuf', new Uint8Array([0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x01]))
    expect(garbage.status).toBe(400)
    expect(((await garbage.json()) as { error: { code: string } }).error.code).toBe('ERR_OTLP_INVALID')
    const badId = await post('application/json', JSON.stringify({ resourceSpans: [{ scopeSpans: [{ spans: [{ traceId: 'xyz', spanId: '0102030405060708' }] }] }] }))
    expect(badId.status).toBe(400)
    const error = ((await badId.json()) as { error: { code: string; message: string } }).error
    expect(error.code).toBe('ERR_OTLP_INVALID')
    expect(error.message).toContain('traceId')
    const wrongType = await post('text/plain', 'hello')
    expect(wrongType.status).toBe(400)
    const tooBig = await post('application/json', Buffer.alloc(9 * 1024 * 1024, 0x20))
    expect(tooBig.status).toBe(413)
    expect(env.proxy.storm.report().spans).toBeUndefined()
    expect((await undiciFetch(`${env.base}/items/sku-1`)).status).toBe(200)
  })
})
