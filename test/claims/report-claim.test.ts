/**
 * Claims from an agent without tracing: `reportClaim()` (toolstorm/effects) and `POST /claims`,
 * joined to the run's calls by tool and order, or by the `traceparent` it names.
 */
import { execFile } from 'node:child_process'
import net from 'node:net'
import path from 'node:path'
import { promisify } from 'node:util'
import type { AddressInfo } from 'node:net'
import { ROOT_CONTEXT, SpanStatusCode, defaultTextMapSetter, trace } from '@opentelemetry/api'
import { W3CTraceContextPropagator } from '@opentelemetry/core'
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http'
import { resourceFromAttributes } from '@opentelemetry/resources'
import { BatchSpanProcessor, NodeTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-node'
import { fetch as undiciFetch } from 'undici'
import { describe, expect, it } from 'vitest'
import { ToolstormEffects } from '../../src/effects/toolstorm-effects.js'
import { startProxied } from '../helpers/proxied.js'
import { ROOT } from '../helpers/cli.js'
import { hasRedis, startRedis } from '../helpers/redis-server.js'
import { closing } from '../helpers/teardown.js'

const run = promisify(execFile)

const LOST_ACK = { seed: 1, rules: [{ name: 'lost-ack', route: 'POST /ship', kind: 'response_lost' as const, calls: [1] }] }

async function ship(base: string, order: string, headers: Record<string, string> = {}): Promise<boolean> {
  try {
    const response = await undiciFetch(`${base}/ship`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ order }) })
    await response.text()
    return response.ok
  } catch {
    return false
  }
}

describe('reportClaim()', () => {
  it('holds an untraced agent’s account against the commits: the lost answer’s commit is silent, the retry confirmed', async () => {
    const env = closing(await startProxied('reverse', LOST_ACK))
    const agent = new ToolstormEffects({ sidecarUrl: env.proxy.adminUrl, token: env.proxy.token })
    // The agent's loop: ship, report what it concluded, retry once on failure.
    for (let attempt = 1; attempt <= 2; attempt++) {
      const ok = await ship(env.base, 'o-1')
      expect(await agent.claim({ tool: 'POST /ship', status: ok ? 'success' : 'failure', toolCallId: `call_${attempt}` })).toBe(true)
      if (ok) break
    }
    const report = await env.report()
    expect(report.claims?.map((c) => [c.toolCallId, c.status, c.verdict, c.join, c.source, c.calls, c.effects.map((e) => e.call)])).toEqual([
      ['call_1', 'failure', 'silent_commit', 'order', 'api', [1], [1]],
      ['call_2', 'success', 'confirmed', 'order', 'api', [2], [2]],
    ])
    expect(agent.stats()).toEqual({ sent: 2, dropped: 0, skipped: 0, pending: 0 })
  })

  it('joins a claim naming its traceparent to exactly the calls sent under it', async () => {
    const env = closing(await startProxied('reverse', LOST_ACK))
    const agent = new ToolstormEffects({ sidecarUrl: env.proxy.adminUrl, token: env.proxy.token })
    const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'
    expect(await ship(env.base, 'o-1', { traceparent })).toBe(false)
    expect(await ship(env.base, 'o-2')).toBe(true)
    // Named by its span, the claim speaks for call 1 only, though it comes after call 2.
    await agent.claim({ tool: 'create_shipment', status: 'failure', traceparent })
    const [claim] = (await env.report()).claims ?? []
    expect([claim?.verdict, claim?.join, claim?.calls, claim?.traceId]).toEqual(['silent_commit', 'trace', [1], '0af7651916cd43dd8448eb211c80319c'])
  })

  it('is fail-open: skips without a sidecar, warns once and never rejects when it is unreachable or refuses', async () => {
    const closed = net.createServer()
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve))
    const port = (closed.address() as AddressInfo).port
    await new Promise<void>((resolve) => closed.close(() => resolve()))
    const previous = process.env.TOOLSTORM_SIDECAR
    delete process.env.TOOLSTORM_SIDECAR
    try {
      expect(await new ToolstormEffects().claim({ tool: 't', status: 'success' })).toBe(false)
    } finally {
      if (previous !== undefined) process.env.TOOLSTORM_SIDECAR = previous
    }
    const warnings: string[] = []
    const unreachable = new ToolstormEffects({ sidecarUrl: `http://127.0.0.1:${port}`, timeoutMs: 300, warn: (m) => warnings.push(m) })
    expect(await Promise.all([unreachable.claim({ tool: 't', status: 'success' }), unreachable.claim({ tool: 't', status: 'failure' })])).toEqual([false, false])
    expect(warnings).toEqual([expect.stringContaining('could not report a claim')])
    const env = closing(await startProxied('reverse', LOST_ACK))
    const noToken = new ToolstormEffects({ sidecarUrl: env.proxy.adminUrl, token: '', warn: (m) => warnings.push(m) })
    expect(await noToken.claim({ tool: 't', status: 'success' })).toBe(false)
    expect(warnings[1]).toContain('HTTP 401')
    expect(noToken.stats()).toEqual({ sent: 0, dropped: 1, skipped: 0, pending: 0 })
    expect((await env.report()).claims).toBeUndefined()
  })
})

describe('report_claim() (Python helper)', () => {
  it('reports a Python agent’s account through HTTP_PROXY: the lost answer’s commit is silent, the retry confirmed', async () => {
    const env = closing(await startProxied('forward', LOST_ACK))
    const script = [
      'import json, sys, urllib.request',
      `sys.path.insert(0, ${JSON.stringify(path.join(ROOT, 'helpers/python'))})`,
      'from toolstorm_effects import report_claim, stats',
      'results = []',
      'for attempt in (1, 2):',
      '    req = urllib.request.Request(sys.argv[1] + "/ship", data=b\'{"order": "o-1"}\', headers={"content-type": "application/json"}, method="POST")',
      '    try:',
      '        with urllib.request.urlopen(req, timeout=10) as response:',
      '            ok = response.status == 201',
      '    except Exception:',
      '        ok = False',
      '    results.append(report_claim("POST /ship", "success" if ok else "failure", tool_call_id="call_%d" % attempt))',
      '    if ok:',
      '        break',
      'print(json.dumps({"results": results, "stats": stats()}))',
    ].join('\n')
    // The run in the proxy credentials, as the Python package's `run.env` names it.
    const proxyUrl = env.proxy.url.replace('http://', 'http://py-agent:x@')
    const proxyEnv = { HTTP_PROXY: proxyUrl, http_proxy: proxyUrl, NO_PROXY: '', no_proxy: '' }
    const { stdout } = await run('python3', ['-c', script, env.base], { env: { ...process.env, ...proxyEnv, TOOLSTORM_SIDECAR: env.proxy.adminUrl, TOOLSTORM_ADMIN_TOKEN: env.proxy.token, TOOLSTORM_RUN: 'py-agent' } })
    expect(JSON.parse(stdout)).toEqual({ results: [true, true], stats: { sent: 2, dropped: 0, skipped: 0, pending: 0 } })
    const report = await env.report('py-agent')
    expect(report.claims?.map((c) => [c.toolCallId, c.status, c.verdict, c.calls])).toEqual([
      ['call_1', 'failure', 'silent_commit', [1]],
      ['call_2', 'success', 'confirmed', [2]],
    ])
  })

  it('is fail-open: skipped with no sidecar named, dropped with one warning when refused', async () => {
    const script = [
      'import json, os, sys, warnings',
      `sys.path.insert(0, ${JSON.stringify(path.join(ROOT, 'helpers/python'))})`,
      'from toolstorm_effects import ToolstormEffects',
      'os.environ.pop("TOOLSTORM_SIDECAR", None)',
      'skipped = ToolstormEffects().claim("t", "success")',
      'fx = ToolstormEffects(sidecar_url=sys.argv[1], token="wrong", timeout=1)',
      'with warnings.catch_warnings(record=True) as caught:',
      '    warnings.simplefilter("always")',
      '    refused = [fx.claim("t", "success"), fx.claim("t", "failure")]',
      'print(json.dumps({"skipped": skipped, "refused": refused, "warnings": [str(w.message) for w in caught], "stats": fx.stats()}))',
    ].join('\n')
    const env = closing(await startProxied('reverse', LOST_ACK))
    const result = JSON.parse((await run('python3', ['-c', script, env.proxy.adminUrl])).stdout) as { skipped: boolean; refused: boolean[]; warnings: string[]; stats: unknown }
    expect(result.skipped).toBe(false)
    expect(result.refused).toEqual([false, false])
    expect(result.warnings).toEqual([expect.stringContaining('could not report a claim')])
    expect(result.warnings[0]).toContain('HTTP 401')
    expect(result.stats).toEqual({ sent: 0, dropped: 2, skipped: 0, pending: 0 })
    expect((await env.report()).claims).toBeUndefined()
  })
})

describe('POST /claims', () => {
  it('answers 400 naming the field of a malformed claim, and stores nothing', async () => {
    const env = closing(await startProxied('reverse', LOST_ACK))
    const post = (body: unknown) => env.admin('/claims', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
    for (const [body, field] of [
      [{ tool: 'create_shipment', status: 'done' }, 'status'],
      [{ status: 'success' }, 'tool'],
      [{ tool: 'x', status: 'success', traceparent: 'nope' }, 'traceparent'],
      [{ tool: 'x', status: 'success', run: 'a b' }, 'run'],
      [{ tool: 'x', status: 'success', extra: 1 }, 'extra'],
    ] as const) {
      const response = await post(body)
      expect(response.status).toBe(400)
      const error = ((await response.json()) as { error: { code: string; message: string } }).error
      expect(error.code).toBe('ERR_CLAIM_INVALID')
      expect(error.message).toContain(field)
    }
    expect((await env.report()).claims).toBeUndefined()
    // A run with a call is known: the claim goes there.
    expect((await undiciFetch(`${env.base}/items/a`, { headers: { 'x-toolstorm-run': 'agent-7' } })).status).toBe(200)
    const created = await post({ tool: 'create_shipment', status: 'success', run: 'agent-7' })
    expect(created.status).toBe(201)
    expect(await created.json()).toEqual({ ok: true, run: 'agent-7', claim: { id: 1, tool: 'create_shipment', status: 'success' } })
    expect((await env.report('agent-7')).claims?.[0]?.verdict).toBe('unverified')
    // A run toolstorm never saw is not created: the claim goes to the default run, and the answer says so.
    const stray = await post({ tool: 'create_shipment', status: 'success', run: 'agnet-7' })
    expect(await stray.json()).toMatchObject({ run: 'default' })
    expect(env.proxy.storm.runIds()).not.toContain('agnet-7')
  })
})

describe.skipIf(!hasRedis)('claims with a shared state store (--state)', () => {
  it.each([
    ['on their resource', { resource: true, batch: false }],
    ['on the tool\'s span, its HTTP child in the same export', { resource: false, batch: true }],
  ])('keeps OTLP spans exported to replica B for the call made through replica A, the run named %s: the span\'s claim joins that call by its trace in every replica\'s report', async (_named, how) => {
    const redis = await startRedis()
    // Closed before Redis, last: a replica closing without its store waits for it.
    const closers: Array<() => Promise<unknown>> = []
    try {
      const state = { url: redis.url, prefix: 'claims' }
      // A: the proxy the agent's calls go through (its upstream reports each commit to A); B: where its spans are exported.
      const a = await startProxied('reverse', LOST_ACK, { state })
      closers.push(() => a.close())
      const b = await startProxied('reverse', LOST_ACK, { state })
      closers.push(() => b.close())
      const exporter = new OTLPTraceExporter({ url: `${b.proxy.adminUrl}/v1/traces`, headers: { Authorization: `Bearer ${b.proxy.token}` } })
      // With a shared store the spans name their run (a trace's run is one replica's memory): on their resource
      // (OTEL_RESOURCE_ATTRIBUTES=toolstorm.run=traced), or on the tool's span, which its child takes in the same export.
      const processor = how.batch ? new BatchSpanProcessor(exporter) : new SimpleSpanProcessor(exporter)
      const provider = new NodeTracerProvider({ ...(how.resource ? { resource: resourceFromAttributes({ 'toolstorm.run': 'traced' }) } : {}), spanProcessors: [processor] })
      closers.unshift(() => provider.shutdown())
      const tracer = provider.getTracer('shipping-agent')
      // One tool call as an instrumented agent makes it: a span, its traceparent on the request, ERROR when it failed.
      const span = tracer.startSpan('execute_tool create_shipment', { attributes: { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': 'create_shipment', 'gen_ai.tool.call.id': 'call_1', ...(how.resource ? {} : { 'toolstorm.run': 'traced' }) } })
      // Its HTTP client span, a child, sends the request: the join needs the link from it to the tool's span.
      const request = tracer.startSpan('POST /ship', {}, trace.setSpan(ROOT_CONTEXT, span))
      const headers: Record<string, string> = { 'x-toolstorm-run': 'traced' }
      new W3CTraceContextPropagator().inject(trace.setSpan(ROOT_CONTEXT, request), headers, defaultTextMapSetter)
      const shipped = await ship(a.base, 'o-1', headers)
      expect(shipped).toBe(false)
      request.end()
      span.setStatus({ code: SpanStatusCode.ERROR, message: 'the shipment failed' })
      span.end()
      // The next call, untraced: the span's claim speaks for the call under it alone.
      expect(await ship(a.base, 'o-2', { 'x-toolstorm-run': 'traced' })).toBe(true)
      await a.effects.flush()
      await provider.forceFlush()
      for (const proxy of [a, b]) {
        const report = await proxy.report('traced')
        expect(report.claims?.map((claim) => [claim.tool, claim.status, claim.source, claim.verdict, claim.join, claim.calls])).toEqual([['create_shipment', 'failure', 'otlp', 'silent_commit', 'trace', [1]]])
        expect(report.spans).toEqual({ received: 2, claims: 1, ignored: 1 })
      }
      expect((await undiciFetch(`${a.base}/items/a`)).status).toBe(200)
    } finally {
      for (const close of closers) await close()
      await redis.close()
    }
  })
})
