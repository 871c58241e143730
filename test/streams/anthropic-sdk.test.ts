/**
 * The @anthropic-ai/sdk (1.14.0) against a fake Anthropic-compatible upstream, through toolstorm
 * on every transport: what a stream fault looks like to the caller, and what the report records.
 */
import Anthropic from '@anthropic-ai/sdk'
import { describe, expect, it } from 'vitest'
import { drain } from '../helpers/drain.js'
import { contract } from '../../src/contracts/contract.js'
import type { StormConfigInput } from '../../src/engine/schema/config.js'
import { modelScenarios, MESSAGES, type ModelScenario } from '../helpers/model-scenario.js'
import { WITHOUT_MSW, type Transport } from '../helpers/transports.js'
import { answered, USAGE, WORDS } from '../helpers/model-upstream.js'

const scenarios = modelScenarios()
let scenario: ModelScenario | null = null

const params = { model: 'claude-x', max_tokens: 64, messages: [{ role: 'user' as const, content: 'Say hello.' }] }
const INPUT = USAGE.messages.input_tokens + USAGE.messages.cache_creation_input_tokens + USAGE.messages.cache_read_input_tokens

async function start(transport: Transport, config: StormConfigInput, options: { timeout?: number } = {}) {
  scenario = await scenarios.start(transport, config)
  const client = new Anthropic({ apiKey: 'sk-ant-test', baseURL: scenario.base, timeout: options.timeout ?? 5_000, fetchOptions: scenario.fetchOptions as never })
  return { s: scenario, client }
}


// Not through MSW handlers: the SDK suites are the slowest files, and MSW's stream faults are covered by test/faults/stream-faults.test.ts.
for (const transport of WITHOUT_MSW) {
  describe(`@anthropic-ai/sdk through toolstorm (${transport})`, () => {
    it('surfaces a cut stream as the raw TypeError "terminated" while iterating, without a retry', async () => {
      const { s, client } = await start(transport, { rules: [{ name: 'cut', route: MESSAGES, kind: 'stream_cut', after: 4 }] })
      const { items, error } = await drain(await client.messages.create({ ...params, stream: true }))
      // Four events reached the client; the SDK does not yield pings.
      expect(items.map((event) => event.type)).toEqual(['message_start', 'content_block_start', 'content_block_delta'])
      expect(error).toBeInstanceOf(TypeError)
      expect(error?.message).toBe('terminated')
      expect(s.upstream.requests).toHaveLength(1)
      const call = (await s.settled()).calls[0]
      expect(call).toMatchObject({ injected: true, outcome: 'error', status: 200, error: 'STREAM_CUT', cut: { events: 4 } })
      // message_delta never reached the client; the upstream's rest was read on after the cut, and the call records its output tokens.
      expect(call?.model).toEqual({ provider: 'anthropic', api: 'messages', model: answered('claude-x'), inputTokens: INPUT, outputTokens: USAGE.messages.output_tokens, streamed: true })
    })

    it('rejects the message stream helper with an AnthropicError "terminated" on a cut', async () => {
      const { client } = await start(transport, { rules: [{ name: 'cut', route: MESSAGES, kind: 'stream_cut', after: 2 }] })
      const error = await client.messages
        .stream(params)
        .finalMessage()
        .catch((e: Error) => e)
      expect(error).toBeInstanceOf(Anthropic.AnthropicError)
      expect((error as Error).message).toBe('terminated')
    })

    it('stalls a stream: the SDK timeout covers only the response head; the caller\'s signal ends it with APIUserAbortError', async () => {
      const { s, client } = await start(transport, { rules: [{ name: 'stall', route: MESSAGES, kind: 'stream_stall', after: 3 }] }, { timeout: 300 })
      const started = performance.now()
      const error = await client.messages
        .stream(params, { signal: AbortSignal.timeout(900) })
        .finalMessage()
        .catch((e: Error) => e)
      expect(error).toBeInstanceOf(Anthropic.APIUserAbortError)
      expect(performance.now() - started).toBeGreaterThanOrEqual(850)
      expect((await s.settled()).calls[0]).toMatchObject({ injected: true, outcome: 'cancelled', error: 'CLIENT_ABORTED', cut: { events: 3 } })
    })

    it('ends a stalled raw stream silently when the caller\'s signal fires', async () => {
      const { client } = await start(transport, { rules: [{ name: 'stall', route: MESSAGES, kind: 'stream_stall', after: 2 }] }, { timeout: 300 })
      const { items, error } = await drain(await client.messages.create({ ...params, stream: true }, { signal: AbortSignal.timeout(700) }))
      expect(error).toBeNull()
      expect(items.map((event) => event.type)).toEqual(['message_start', 'content_block_start'])
    })

    it('makes a stream without message_stop visible: the helper finds no final message', async () => {
      const { s, client } = await start(transport, { rules: [{ name: 'drop', route: MESSAGES, kind: 'drop_terminal' }] })
      const stream = client.messages.stream(params)
      const texts: string[] = []
      stream.on('text', (text) => texts.push(text))
      const error = await stream.finalMessage().catch((e: Error) => e)
      expect(texts.join('')).toBe(WORDS.join(''))
      expect(error).toBeInstanceOf(Anthropic.AnthropicError)
      expect((error as Error).message).toBe('stream ended without producing a Message with role=assistant')
      const call = (await s.settled()).calls[0]
      expect(call).toMatchObject({ injected: true, outcome: 'response', model: { inputTokens: INPUT, outputTokens: USAGE.messages.output_tokens } })
    })

    it('ends a raw stream without message_stop quietly: iteration simply stops after message_delta', async () => {
      const { client } = await start(transport, { rules: [{ name: 'drop', route: MESSAGES, kind: 'drop_terminal' }] })
      const { items, error } = await drain(await client.messages.create({ ...params, stream: true }))
      expect(error).toBeNull()
      expect(items.at(-1)?.type).toBe('message_delta')
    })

    it('slows a stream down between events', async () => {
      const { client } = await start(transport, { rules: [{ name: 'slow', route: MESSAGES, kind: 'slow_stream', delay: 0.08 }] })
      const times: number[] = []
      for await (const _event of await client.messages.create({ ...params, stream: true })) times.push(performance.now())
      expect(times.length).toBeGreaterThanOrEqual(8)
      // Each event waits 80 ms; scheduling jitter can bunch two deliveries, so judge the gaps as a whole.
      const gaps = times.slice(1).map((t, i) => t - times[i]!).sort((a, b) => a - b)
      expect(gaps[Math.floor(gaps.length / 2)]).toBeGreaterThanOrEqual(70)
      expect(times.at(-1)! - times[0]!).toBeGreaterThanOrEqual(0.9 * 80 * gaps.length)
    })

    it('records the answered model and the usage the upstream sent, cache reads and writes in the input', async () => {
      const { s, client } = await start(transport, { rules: [] })
      const streamed = await client.messages.stream(params).finalMessage()
      expect(streamed.usage).toMatchObject(USAGE.messages)
      const whole = await client.messages.create({ ...params, model: 'claude-y' })
      expect(whole.usage).toMatchObject(USAGE.messages)
      const report = await s.settled()
      expect(report.calls.map((call) => call.model)).toEqual([
        { provider: 'anthropic', api: 'messages', model: answered('claude-x'), inputTokens: 33, outputTokens: 9, streamed: true },
        { provider: 'anthropic', api: 'messages', model: answered('claude-y'), inputTokens: 33, outputTokens: 9, streamed: false },
      ])
      expect(JSON.stringify(report)).not.toMatch(/Say hello|Hello, world/)
      const checks = contract(report).atMostModelCalls(2).atMostTokens(84).atMostTokens(83).atMostTokens(17, { kind: 'output' }).checks
      expect(checks.map((check) => [check.name, check.passed, check.detail])).toEqual([
        ['Model-call budget', true, '2 / 2 model calls'],
        ['Token budget', true, '84 / 84 tokens'],
        ['Token budget', false, '84 / 83 tokens'],
        ['Token budget: output', false, '18 / 17 tokens'],
      ])
    })
  })
}
