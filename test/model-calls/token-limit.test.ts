/**
 * `token_limit` (#26): the calls a rule selects share a budget of tokens (from the real usage of
 * the calls it let through) and optionally requests per minute; past it the official SDKs get the
 * provider's 429 with the limit, what remains and when the window resets, and a retry after the
 * advertised delay gets through once the window has turned.
 */
import Anthropic from '@anthropic-ai/sdk'
import OpenAI from 'openai'
import { describe, expect, it } from 'vitest'
import { RealClock } from '../../src/engine/clock.js'
import type { StormConfigInput } from '../../src/engine/schema/config.js'
import { createStorm } from '../../src/create-storm.js'
import { modelScenarios, MESSAGES, CHAT, type ModelScenario } from '../helpers/model-scenario.js'
import { WITHOUT_MSW, type Transport } from '../helpers/transports.js'
import { USAGE, WORDS } from '../helpers/model-upstream.js'

const scenarios = modelScenarios()
let scenario: ModelScenario | null = null

const messages = [{ role: 'user' as const, content: 'Say hello.' }]
const claude = { model: 'claude-x', max_tokens: 64, messages }
/** Tokens one answered call uses: chat 11 + 7 = 18; Anthropic (21 + 4 + 8) + 9 = 42. */
const CHAT_TOKENS = USAGE.chat.prompt_tokens + USAGE.chat.completion_tokens
const MESSAGE_TOKENS = USAGE.messages.input_tokens + USAGE.messages.cache_creation_input_tokens + USAGE.messages.cache_read_input_tokens + USAGE.messages.output_tokens

/** Real time, with a jump: a test can start the next call near the end of a minute window. */
class JumpClock extends RealClock {
  #offset = 0
  override now(): number {
    return super.now() + this.#offset
  }
  jump(seconds: number): void {
    this.#offset += seconds
  }
}

async function openai(transport: Transport, config: StormConfigInput, options: { maxRetries?: number; clock?: JumpClock } = {}) {
  scenario = await scenarios.start(transport, config, { gapMs: 2, ...(options.clock ? { clock: options.clock } : {}) })
  return new OpenAI({ apiKey: 'sk-test', baseURL: `${scenario.base}/v1`, maxRetries: options.maxRetries ?? 0, timeout: 5_000, fetchOptions: scenario.fetchOptions as never })
}

async function anthropic(transport: Transport, config: StormConfigInput) {
  scenario = await scenarios.start(transport, config, { gapMs: 2 })
  return new Anthropic({ apiKey: 'sk-ant-test', baseURL: scenario.base, maxRetries: 0, timeout: 5_000, fetchOptions: scenario.fetchOptions as never })
}

const rule = (route: string, budget: { tokensPerMinute: number; requestsPerMinute?: number }) => ({ rules: [{ name: 'quota', route, kind: 'token_limit' as const, ...budget }] })

// Not through MSW handlers: the SDK suites are the slowest files, and MSW's stream faults are covered by test/faults/stream-faults.test.ts.
for (const transport of WITHOUT_MSW) {
  describe(`token_limit on model calls (${transport})`, () => {
    it('answers the openai SDK RateLimitError on tokens once the minute\'s budget is spent, with the remaining tokens and the reset', async () => {
      const client = await openai(transport, rule(CHAT, { tokensPerMinute: 30 }))
      // 18 tokens, then 36: the third call finds the budget spent (streamed usage counts too).
      await client.chat.completions.create({ model: 'gpt-x', messages })
      for await (const _chunk of await client.chat.completions.create({ model: 'gpt-x', messages, stream: true, stream_options: { include_usage: true } })) void _chunk
      const error = (await client.chat.completions.create({ model: 'gpt-x', messages }).catch((e: unknown) => e)) as InstanceType<typeof OpenAI.RateLimitError>
      expect(error).toBeInstanceOf(OpenAI.RateLimitError)
      expect([error.status, error.type, error.code]).toEqual([429, 'tokens', 'rate_limit_exceeded'])
      expect(error.message).toMatch(/^429 Rate limit reached on tokens per min \(TPM\): Limit 30, Used 30, Requested 1\. Please try again in \d+(\.\d+)?s\.$/)
      const headers = error.headers!
      expect([headers.get('x-ratelimit-limit-tokens'), headers.get('x-ratelimit-remaining-tokens'), headers.get('x-ratelimit-limit-requests')]).toEqual(['30', '0', null])
      // The window is the run's first minute: it resets within the minute, and retry-after-ms says when.
      const resetMs = Number(headers.get('retry-after-ms'))
      expect(resetMs).toBeGreaterThan(50_000)
      expect(resetMs).toBeLessThanOrEqual(60_000)
      expect(headers.get('x-ratelimit-reset-tokens')).toBe(`${Number((resetMs / 1000).toFixed(3))}s`)
      const report = await scenario!.settled()
      expect(report.calls.map((call) => [call.status, call.injected, call.model?.inputTokens, call.model?.outputTokens])).toEqual([
        [200, false, USAGE.chat.prompt_tokens, USAGE.chat.completion_tokens],
        [200, false, USAGE.chat.prompt_tokens, USAGE.chat.completion_tokens],
        [429, true, null, null],
      ])
      expect(report.calls[2]?.retryAfter).toBeCloseTo(resetMs / 1000, 3)
      expect(report.coverage.quota).toEqual({ eligible: 3, selected: 3, triggered: 1 })
    })

    it('answers on requests per minute when those run out first, reporting the tokens left', async () => {
      const client = await openai(transport, rule(CHAT, { tokensPerMinute: 1000, requestsPerMinute: 2 }))
      await client.chat.completions.create({ model: 'gpt-x', messages })
      await client.chat.completions.create({ model: 'gpt-x', messages })
      const error = (await client.chat.completions.create({ model: 'gpt-x', messages }).catch((e: unknown) => e)) as InstanceType<typeof OpenAI.RateLimitError>
      expect([error.status, error.type]).toEqual([429, 'requests'])
      const headers = error.headers!
      expect(['limit-requests', 'remaining-requests', 'limit-tokens', 'remaining-tokens'].map((name) => headers.get(`x-ratelimit-${name}`))).toEqual(['2', '0', '1000', String(1000 - 2 * CHAT_TOKENS)])
    })

    it('answers Anthropic RateLimitError with anthropic-ratelimit-tokens-* and an RFC 3339 reset within the minute', async () => {
      const client = await anthropic(transport, rule(MESSAGES, { tokensPerMinute: 50 }))
      const before = Date.now()
      await client.messages.create(claude)
      await client.messages.create(claude)
      const error = (await client.messages.create(claude).catch((e: unknown) => e)) as InstanceType<typeof Anthropic.RateLimitError>
      expect(error).toBeInstanceOf(Anthropic.RateLimitError)
      expect([error.type, error.apiMessage]).toEqual(['rate_limit_error', 'This request would exceed the rate limit for your organization of 50 tokens per minute. Please try again later.'])
      const headers = error.headers!
      expect([headers.get('anthropic-ratelimit-tokens-limit'), headers.get('anthropic-ratelimit-tokens-remaining')]).toEqual(['50', '0'])
      const reset = Date.parse(headers.get('anthropic-ratelimit-tokens-reset')!)
      expect(reset - before).toBeGreaterThan(50_000)
      expect(reset - before).toBeLessThanOrEqual(62_000)
      expect(Number(headers.get('retry-after'))).toBe(Math.ceil(Number(headers.get('retry-after-ms')) / 1000))
      expect((await scenario!.settled()).calls.map((call) => call.model?.inputTokens === null ? null : (call.model?.inputTokens ?? 0) + (call.model?.outputTokens ?? 0))).toEqual([MESSAGE_TOKENS, MESSAGE_TOKENS, null])
    })
  })
}

it('the openai SDK waits the advertised retry-after-ms and its retry gets through in the next window, both calls in the report', async () => {
  const clock = new JumpClock()
  const client = await openai('reverse', rule(CHAT, { tokensPerMinute: 10 }), { maxRetries: 2, clock })
  // The run starts with its first call, just after t0.
  const t0 = clock.now()
  await client.chat.completions.create({ model: 'gpt-x', messages })
  // About 0.5 s before the window turns: the 429 says so, the SDK waits that long, and retries.
  clock.jump(59.5 - (clock.now() - t0))
  const started = performance.now()
  const answer = await client.chat.completions.create({ model: 'gpt-x', messages })
  expect(answer.choices[0]?.message.content).toBe(WORDS.join(''))
  const calls = (await scenario!.settled()).calls
  expect(calls.map((call) => [call.status, call.injected])).toEqual([
    [200, false],
    [429, true],
    [200, false],
  ])
  expect(calls[1]!.retryAfter).toBeGreaterThan(0.3)
  expect(calls[1]!.retryAfter).toBeLessThanOrEqual(0.6)
  expect(performance.now() - started).toBeGreaterThanOrEqual(calls[1]!.retryAfter! * 1000 - 20)
})

it('refuses token_limit without tokensPerMinute, naming the field', () => {
  expect(() => createStorm({ rules: [{ name: 'quota', route: CHAT, kind: 'token_limit' } as never] })).toThrow(/rules\[0\]\.tokensPerMinute.*expected a positive integer \(tokens per minute\)/s)
  expect(() => createStorm(rule(CHAT, { tokensPerMinute: 0 }))).toThrow(/tokensPerMinute/)
})
