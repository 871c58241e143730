/**
 * A real agent framework's own telemetry as claims: the Vercel AI SDK's `generateText` with
 * telemetry on, its OpenAI provider and its tools calling through the proxy (forward mode), a
 * local fake model that asks for two shipments, and the SDK's tool spans exported over
 * OTLP/HTTP protobuf. Faults on the tool server's route make the SDK's account wrong both ways.
 * AI SDK 7 traces through an integration of `@ai-sdk/otel`: `OpenTelemetry` (GenAI semantic
 * conventions: `execute_tool` spans) or `LegacyOpenTelemetry` (AI SDK 6's `ai.toolCall` spans).
 */
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { context, propagation, trace, type Tracer } from '@opentelemetry/api'
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto'
import { NodeTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-node'
import { createOpenAI } from '@ai-sdk/openai'
import { LegacyOpenTelemetry, OpenTelemetry } from '@ai-sdk/otel'
import { generateText, stepCountIs, tool } from 'ai'
import { fetch as undiciFetch, type Dispatcher } from 'undici'
import { describe, expect, it, onTestFinished } from 'vitest'
import { z } from 'zod'
import { startProxied } from '../helpers/proxied.js'
import { closing, closingServer } from '../helpers/teardown.js'

/** A chat-completions model that asks for `create_shipment` once per order, then answers in text. */
async function startToolCallingModel(orders: string[]): Promise<string> {
  const model = closingServer(http.createServer((req, res) => {
    let body = ''
    req.on('data', (chunk: Buffer) => (body += chunk))
    req.on('end', () => {
      const messages = (JSON.parse(body) as { messages: Array<{ role: string }> }).messages
      const done = messages.filter((message) => message.role === 'tool').length
      const order = orders[done]
      const message = order
        ? { role: 'assistant', content: null, tool_calls: [{ id: `call_${done + 1}`, type: 'function', function: { name: 'create_shipment', arguments: JSON.stringify({ order }) } }] }
        : { role: 'assistant', content: 'All shipments handled.' }
      const text = JSON.stringify({
        id: `chatcmpl-${done}`,
        object: 'chat.completion',
        created: 1_700_000_000,
        model: 'gpt-test',
        choices: [{ index: 0, message, finish_reason: order ? 'tool_calls' : 'stop' }],
        usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
      })
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) })
      res.end(text)
    })
  }))
  await new Promise<void>((resolve) => model.listen(0, '127.0.0.1', resolve))
  return `http://127.0.0.1:${(model.address() as AddressInfo).port}`
}

const INTEGRATIONS = [
  ['OpenTelemetry', 'execute_tool', (tracer: Tracer) => new OpenTelemetry({ tracer })],
  ['LegacyOpenTelemetry', 'ai.toolCall', (tracer: Tracer) => new LegacyOpenTelemetry({ tracer })],
] as const

describe('claims from the Vercel AI SDK’s telemetry', () => {
  it.each(INTEGRATIONS)('turns its tool spans (%s: %s) into claims: a lost answer is a silent commit, a replaced one a phantom success', async (_name, _spans, integration) => {
    const env = closing(await startProxied('forward', {
      seed: 11,
      commits: ['POST /ship'],
      rules: [
        { name: 'lost-ack', route: 'POST /ship', kind: 'response_lost', calls: [1] },
        { name: 'fake-ok', route: 'POST /ship', kind: 'replace', calls: [2], status: 201, replacement: { shipment: 99 } },
      ],
    }))
    const viaProxy = env.dispatcher as Dispatcher
    const exporter = new OTLPTraceExporter({ url: `${env.proxy.adminUrl}/v1/traces`, headers: { Authorization: `Bearer ${env.proxy.token}` } })
    const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
    // Registered globally below: shut down and unregistered when the case ends, passed or failed.
    onTestFinished(async () => {
      await provider.shutdown()
      trace.disable()
      context.disable()
      propagation.disable()
    })
    // The global context manager and W3C propagator: the tool's request carries the span it runs under.
    provider.register()
    const toolServer = env.base
    const openai = createOpenAI({
      baseURL: `${await startToolCallingModel(['o-1', 'o-2'])}/v1`,
      apiKey: 'sk-test-not-a-real-key',
      fetch: ((url: string, init: RequestInit) => undiciFetch(url, { ...(init as object), dispatcher: viaProxy })) as unknown as typeof fetch,
    })
    const result = await generateText({
      model: openai.chat('gpt-test'),
      prompt: 'Ship orders o-1 and o-2.',
      stopWhen: stepCountIs(5),
      experimental_telemetry: { isEnabled: true, integrations: integration(provider.getTracer('ai')) },
      tools: {
        create_shipment: tool({
          description: 'Create a shipment for an order',
          inputSchema: z.object({ order: z.string() }),
          execute: async ({ order }) => {
            const headers: Record<string, string> = { 'content-type': 'application/json' }
            propagation.inject(context.active(), headers)
            const response = await undiciFetch(`${toolServer}/ship`, { method: 'POST', headers, body: JSON.stringify({ order }), dispatcher: viaProxy })
            if (!response.ok) throw new Error(`HTTP ${response.status}`)
            return (await response.json()) as Record<string, unknown>
          },
        }),
      },
    })
    expect(result.text).toBe('All shipments handled.')
    await provider.forceFlush()
    // o-1 committed (its answer was lost), o-2 never reached the tool server (its answer was made up).
    expect(env.upstream.commits).toEqual(['o-1'])
    const report = await env.report()
    expect(report.claims?.map((c) => [c.tool, c.toolCallId, c.status, c.verdict, c.join, c.effects.map((e) => e.key)])).toEqual([
      ['create_shipment', 'call_1', 'failure', 'silent_commit', 'trace', ['o-1']],
      ['create_shipment', 'call_2', 'success', 'phantom_success', 'trace', []],
    ])
    // The model calls went through the proxy too, as model calls.
    expect(report.calls.filter((call) => call.model).length).toBe(3)
    // The SDK's other spans (generateText, each model call) are counted and ignored.
    expect(report.spans?.claims).toBe(2)
    expect(report.spans?.ignored).toBeGreaterThanOrEqual(3)
  })
})
