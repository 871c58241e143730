/**
 * The openai SDK (6.49.0) against a fake OpenAI-compatible upstream, through toolstorm on every
 * transport: what a stream fault looks like to the caller, and what the report records.
 */
import OpenAI from 'openai'
import { describe, expect, it } from 'vitest'
import { drain } from '../helpers/drain.js'
import { contract } from '../../src/contracts/contract.js'
import type { StormConfigInput } from '../../src/engine/schema/config.js'
import { modelScenarios, RESPONSES, CHAT, type ModelScenario } from '../helpers/model-scenario.js'
import { WITHOUT_MSW, type Transport } from '../helpers/transports.js'
import { answered, USAGE, WORDS } from '../helpers/model-upstream.js'

const scenarios = modelScenarios()
let scenario: ModelScenario | null = null

const messages = [{ role: 'user' as const, content: 'Say hello.' }]

async function start(transport: Transport, config: StormConfigInput, options: { timeout?: number; maxRetries?: number } = {}) {
  scenario = await scenarios.start(transport, config)
  // Built after intercept(): the SDK captures fetch when it is constructed.
  const client = new OpenAI({ apiKey: 'sk-test', baseURL: `${scenario.base}/v1`, timeout: options.timeout ?? 5_000, maxRetries: options.maxRetries ?? 2, fetchOptions: scenario.fetchOptions as never })
  return { s: scenario, client }
}


// Not through MSW handlers: the SDK suites are the slowest files, and MSW's stream faults are covered by test/faults/stream-faults.test.ts.
for (const transport of WITHOUT_MSW) {
  describe(`openai SDK through toolstorm (${transport})`, () => {
    it('surfaces a cut chat stream as the raw TypeError "terminated" while iterating, without a retry', async () => {
      const { s, client } = await start(transport, { rules: [{ name: 'cut', route: CHAT, kind: 'stream_cut', after: 3 }] })
      const stream = await client.chat.completions.create({ model: 'gpt-x', messages, stream: true, stream_options: { include_usage: true } })
      const { items, error } = await drain(stream)
      expect(items.map((chunk) => chunk.choices[0]?.delta.content)).toEqual(['', WORDS[0], WORDS[1]])
      expect(error).toBeInstanceOf(TypeError)
      expect(error).not.toBeInstanceOf(OpenAI.APIError)
      expect(error?.message).toBe('terminated')
      expect(s.upstream.requests).toHaveLength(1)
      const call = (await s.settled()).calls[0]
      expect(call).toMatchObject({ injected: true, outcome: 'error', status: 200, error: 'STREAM_CUT', cut: { events: 3 } })
      // The client never got the usage chunk; the upstream's rest was read on after the cut, and the call records it.
      expect(call?.model).toEqual({ provider: 'openai', api: 'chat.completions', model: answered('gpt-x'), inputTokens: USAGE.chat.prompt_tokens, outputTokens: USAGE.chat.completion_tokens, streamed: true })
    })

    it('surfaces a cut Responses stream as an OpenAIError from the stream helper', async () => {
      const { client } = await start(transport, { rules: [{ name: 'cut', route: RESPONSES, kind: 'stream_cut', after: 2 }] })
      const error = await client.responses
        .stream({ model: 'gpt-r', input: 'Say hello.' })
        .finalResponse()
        .catch((e: Error) => e)
      expect(error).toBeInstanceOf(OpenAI.OpenAIError)
      expect((error as Error).message).toBe('terminated')
    })

    it('stalls a chat stream: the SDK timeout covers only the response head, so only the caller\'s signal ends the wait, silently', async () => {
      const { s, client } = await start(transport, { rules: [{ name: 'stall', route: CHAT, kind: 'stream_stall', after: 2 }] }, { timeout: 300 })
      const started = performance.now()
      const stream = await client.chat.completions.create({ model: 'gpt-x', messages, stream: true }, { signal: AbortSignal.timeout(900) })
      const { items, error } = await drain(stream)
      // The openai SDK treats an aborted stream as finished: no error, just fewer chunks.
      expect(error).toBeNull()
      expect(items).toHaveLength(2)
      expect(performance.now() - started).toBeGreaterThanOrEqual(850)
      expect((await s.settled()).calls[0]).toMatchObject({ injected: true, outcome: 'cancelled', error: 'CLIENT_ABORTED', cut: { events: 2 } })
    })

    it('rejects the stalled Responses stream helper with APIUserAbortError when the caller\'s signal fires', async () => {
      const { client } = await start(transport, { rules: [{ name: 'stall', route: RESPONSES, kind: 'stream_stall', after: 3 }] }, { timeout: 300 })
      const error = await client.responses
        .stream({ model: 'gpt-r', input: 'Say hello.' }, { signal: AbortSignal.timeout(600) })
        .finalResponse()
        .catch((e: Error) => e)
      expect(error).toBeInstanceOf(OpenAI.APIUserAbortError)
    })

    it('lets a chat stream without its final [DONE] end normally: the SDK does not notice', async () => {
      const { s, client } = await start(transport, { rules: [{ name: 'drop', route: CHAT, kind: 'drop_terminal' }] })
      const stream = await client.chat.completions.create({ model: 'gpt-x', messages, stream: true, stream_options: { include_usage: true } })
      const { items, error } = await drain(stream)
      expect(error).toBeNull()
      expect(items.map((chunk) => chunk.choices[0]?.delta.content ?? '').join('')).toBe(WORDS.join(''))
      expect(items.at(-1)?.usage).toMatchObject(USAGE.chat)
      expect((await s.settled()).calls[0]).toMatchObject({ injected: true, outcome: 'response', model: { inputTokens: USAGE.chat.prompt_tokens, outputTokens: USAGE.chat.completion_tokens } })
    })

    it('shows a Responses stream without response.completed as an unfinished response without usage', async () => {
      const { client } = await start(transport, { rules: [{ name: 'drop', route: RESPONSES, kind: 'drop_terminal' }] })
      const response = await client.responses.stream({ model: 'gpt-r', input: 'Say hello.' }).finalResponse()
      expect(response.status).toBe('in_progress')
      expect(response.usage).toBeNull()
    })

    it('slows a chat stream down between chunks', async () => {
      const { client } = await start(transport, { rules: [{ name: 'slow', route: CHAT, kind: 'slow_stream', delay: 0.08 }] })
      const stream = await client.chat.completions.create({ model: 'gpt-x', messages, stream: true })
      const times: number[] = []
      for await (const _chunk of stream) times.push(performance.now())
      expect(times.length).toBeGreaterThanOrEqual(6)
      // Each event waits 80 ms; scheduling jitter can bunch two deliveries, so judge the gaps as a whole.
      const gaps = times.slice(1).map((t, i) => t - times[i]!).sort((a, b) => a - b)
      expect(gaps[Math.floor(gaps.length / 2)]).toBeGreaterThanOrEqual(70)
      expect(times.at(-1)! - times[0]!).toBeGreaterThanOrEqual(0.9 * 80 * gaps.length)
    })

    it('records the answered model and exactly the usage the upstream sent, streamed or not', async () => {
      const { s, client } = await start(transport, { rules: [] })
      const streamed = await client.chat.completions.create({ model: 'gpt-x', messages, stream: true, stream_options: { include_usage: true } })
      await drain(streamed)
      const withoutUsage = await client.chat.completions.create({ model: 'gpt-y', messages, stream: true })
      await drain(withoutUsage)
      const whole = await client.chat.completions.create({ model: 'gpt-z', messages })
      expect(whole.usage).toMatchObject(USAGE.chat)
      await client.responses.stream({ model: 'gpt-r', input: 'Say hello.' }).finalResponse()
      await client.responses.create({ model: 'gpt-s', input: 'Say hello.' })
      const report = await s.settled()
      expect(report.calls.map((call) => call.model)).toEqual([
        { provider: 'openai', api: 'chat.completions', model: answered('gpt-x'), inputTokens: 11, outputTokens: 7, streamed: true },
        // Its answer ended ([DONE]) without usage: its tokens are unknown, not zero.
        { provider: 'openai', api: 'chat.completions', model: answered('gpt-y'), inputTokens: null, outputTokens: null, streamed: true, usageMissing: true },
        { provider: 'openai', api: 'chat.completions', model: answered('gpt-z'), inputTokens: 11, outputTokens: 7, streamed: false },
        { provider: 'openai', api: 'responses', model: answered('gpt-r'), inputTokens: 13, outputTokens: 5, streamed: true },
        { provider: 'openai', api: 'responses', model: answered('gpt-s'), inputTokens: 13, outputTokens: 5, streamed: false },
      ])
      for (const call of report.calls) expect(call.elapsed).toBeGreaterThan(0)
      // Prompts and outputs never reach the report.
      expect(JSON.stringify(report)).not.toMatch(/Say hello|Hello, world/)
    })

    it('checks model-call and token budgets against the report', async () => {
      const { s, client } = await start(transport, { rules: [] })
      await drain(await client.chat.completions.create({ model: 'gpt-x', messages, stream: true, stream_options: { include_usage: true } }))
      await client.chat.completions.create({ model: 'gpt-x', messages })
      const checks = contract(await s.settled()).atMostModelCalls(2).atMostModelCalls(1).atMostTokens(36).atMostTokens(35).atMostTokens(22, { kind: 'input' }).checks
      expect(checks.map((check) => [check.name, check.passed, check.detail])).toEqual([
        ['Model-call budget', true, '2 / 2 model calls'],
        ['Model-call budget', false, '2 / 1 model calls'],
        ['Token budget', true, '36 / 36 tokens'],
        ['Token budget', false, '36 / 35 tokens'],
        ['Token budget: input', true, '22 / 22 tokens'],
      ])
    })
  })
}
