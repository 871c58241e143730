/**
 * `token_limit` with `--state` (#26): replicas behind one quota share one budget, counted in
 * Redis by a script per call (calls let through) and per finished call (its real tokens), so the
 * 429's remaining and reset are the same whichever replica answers; while Redis is unreachable a
 * quota call is answered as any other exchange is (503, or passed with --state-unavailable=pass).
 */
import OpenAI from 'openai'
import { createClient } from 'redis'
import { describe, expect, it } from 'vitest'
import type { Report } from '../../src/engine/schema/report.js'
import type { StormConfigInput } from '../../src/engine/schema/config.js'
import { startProxy, type ProxyOptions, type ProxyServer } from '../../src/proxy/proxy-server.js'
import { hasRedis } from '../helpers/redis-server.js'
import { startModelUpstream, USAGE } from '../helpers/model-upstream.js'
import { useReplicaSetting } from '../helpers/replicas.js'
import { closing } from '../helpers/teardown.js'
import { CHAT } from '../helpers/model-scenario.js'

const CHAT_TOKENS = USAGE.chat.prompt_tokens + USAGE.chat.completion_tokens
const RUN = 'quota-run'
const messages = [{ role: 'user' as const, content: 'Say hello.' }]
const quota = (budget: { tokensPerMinute: number; requestsPerMinute?: number }): StormConfigInput => ({ rules: [{ name: 'quota', route: CHAT, kind: 'token_limit', ...budget }] })

const setting = useReplicaSetting(() => startModelUpstream({ gapMs: 2 }))

async function replica(config: StormConfigInput, extra: Partial<ProxyOptions> = {}): Promise<ProxyServer> {
  return closing(await startProxy({ targets: [setting.upstream!.url], config, state: { url: setting.redis!.url, prefix: 'tq' }, ...extra }))
}

const client = (proxy: ProxyServer) => new OpenAI({ apiKey: 'sk-test', baseURL: `${proxy.url}/v1`, maxRetries: 0, timeout: 5_000, defaultHeaders: { 'x-toolstorm-run': RUN } })

const chat = (proxy: ProxyServer) =>
  fetch(`${proxy.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-toolstorm-run': RUN }, body: JSON.stringify({ model: 'gpt-x', messages }) })

/** The tokens Redis holds for the run's first window: a finished call's tokens land just after its answer. */
async function tokensCharged(expected: number): Promise<void> {
  const redisClient = createClient({ url: setting.redis!.url })
  await redisClient.connect()
  try {
    let tokens = 0
    for (let attempt = 0; attempt < 200 && tokens !== expected; attempt++) {
      tokens = Number((await redisClient.hGet(`{tq:${RUN}}:q`, '0:quota:t')) ?? 0)
      if (tokens !== expected) await new Promise((resolve) => setTimeout(resolve, 10))
    }
    expect(tokens).toBe(expected)
  } finally {
    await redisClient.close()
  }
}

async function report(proxy: ProxyServer): Promise<Report> {
  return (await (await fetch(`${proxy.adminUrl}/report?run=${RUN}`, { headers: { authorization: `Bearer ${proxy.token}` } })).json()) as Report
}

describe.skipIf(!hasRedis)('token_limit shared by replicas through --state', () => {
  it('spends one token budget across two replicas: the third call, on either, gets the openai SDK RateLimitError with the shared remaining and reset', async () => {
    const [a, b] = [await replica(quota({ tokensPerMinute: 30 })), await replica(quota({ tokensPerMinute: 30 }))]
    await client(a!).chat.completions.create({ model: 'gpt-x', messages })
    await tokensCharged(CHAT_TOKENS)
    await client(b!).chat.completions.create({ model: 'gpt-x', messages })
    await tokensCharged(2 * CHAT_TOKENS)
    const errors = await Promise.all([a!, b!].map((proxy) => client(proxy).chat.completions.create({ model: 'gpt-x', messages }).then(() => null, (e: unknown) => e as InstanceType<typeof OpenAI.RateLimitError>)))
    for (const error of errors) {
      expect(error).toBeInstanceOf(OpenAI.RateLimitError)
      if (!error) continue
      expect(error.message).toMatch(/^429 Rate limit reached on tokens per min \(TPM\): Limit 30, Used 30, Requested 1\./)
      expect([error.headers!.get('x-ratelimit-limit-tokens'), error.headers!.get('x-ratelimit-remaining-tokens')]).toEqual(['30', '0'])
    }
    // One window on the run's shared clock: both replicas name (nearly) the same reset, within the minute.
    const resets = errors.map((error) => Number(error?.headers?.get('retry-after-ms')))
    for (const reset of resets) expect(reset).toBeGreaterThan(40_000)
    expect(Math.abs(resets[0]! - resets[1]!)).toBeLessThan(5_000)
    // A replica stores a call's end in Redis once its client has the answer: the merged report is
    // read once every call has ended (two files at a time, the other replica's was still on its way).
    await expect.poll(async () => (await report(a!)).calls.every((call) => call.outcome !== 'running')).toBe(true)
    const merged = await report(a!)
    expect(merged.calls.map((call) => [call.status, call.injected])).toEqual([
      [200, false],
      [200, false],
      [429, true],
      [429, true],
    ])
    expect(merged.coverage.quota).toEqual({ eligible: 4, selected: 4, triggered: 2 })
  })

  it('lets exactly requestsPerMinute calls through when both replicas are hit at once (atomic in Redis)', async () => {
    const config = quota({ tokensPerMinute: 100_000, requestsPerMinute: 3 })
    const replicas = [await replica(config), await replica(config)]
    const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => chat(replicas[i % 2]!)))
    const statuses = answers.map((answer) => answer.status).sort()
    expect(statuses).toEqual([200, 200, 200, 429, 429, 429, 429, 429])
    const refused = answers.filter((answer) => answer.status === 429)
    for (const answer of refused) expect([answer.headers.get('x-ratelimit-limit-requests'), answer.headers.get('x-ratelimit-remaining-requests')]).toEqual(['3', '0'])
    expect(setting.upstream!.requests.length).toBe(3)
  })

  it('answers a quota call 503 ERR_STATE_UNAVAILABLE while Redis is down, and passes it untouched with --state-unavailable=pass', async () => {
    const failing = await replica(quota({ tokensPerMinute: 1 }))
    const passing = await replica(quota({ tokensPerMinute: 1 }), { stateUnavailable: 'pass' })
    await setting.redis!.kill()
    const refused = await chat(failing)
    expect(refused.status).toBe(503)
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('ERR_STATE_UNAVAILABLE')
    expect(setting.upstream!.requests.length).toBe(0)
    // Passed: no rule applies, so a spent budget does not refuse it either.
    expect((await chat(passing)).status).toBe(200)
    expect((await chat(passing)).status).toBe(200)
    expect(setting.upstream!.requests.length).toBe(2)
  })
})
