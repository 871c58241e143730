/**
 * Status faults on a model call answer as the provider does (#26 item 1): the official SDKs
 * (openai 6.49.0, @anthropic-ai/sdk 1.14.0) raise their own typed errors, read the provider's
 * headers, and where they retry, wait the advertised delay and succeed on the next call, which
 * the report counts. A route that is not a model call keeps the generic answers.
 */
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import Anthropic from '@anthropic-ai/sdk'
import OpenAI from 'openai'
import { describe, expect, it } from 'vitest'
import { createStorm } from '../../src/create-storm.js'
import { contract } from '../../src/contracts/contract.js'
import type { StormConfigInput } from '../../src/engine/schema/config.js'
import type { CallRecord } from '../../src/engine/schema/report.js'
import { modelScenarios, MESSAGES, RESPONSES, CHAT, type ModelScenario } from '../helpers/model-scenario.js'
import { closing, closingServer } from '../helpers/teardown.js'
import { openTransport, TRANSPORTS, type Transport } from '../helpers/transports.js'
import { WORDS } from '../helpers/model-upstream.js'

const scenarios = modelScenarios()
let scenario: ModelScenario | null = null

const messages = [{ role: 'user' as const, content: 'Say hello.' }]
const claude = { model: 'claude-x', max_tokens: 64, messages }

async function openai(transport: Transport, config: StormConfigInput, maxRetries = 0) {
  scenario = await scenarios.start(transport, config)
  return new OpenAI({ apiKey: 'sk-test', baseURL: `${scenario.base}/v1`, maxRetries, timeout: 5_000, fetchOptions: scenario.fetchOptions as never })
}

async function anthropic(transport: Transport, config: StormConfigInput, maxRetries = 0) {
  scenario = await scenarios.start(transport, config)
  return new Anthropic({ apiKey: 'sk-ant-test', baseURL: scenario.base, maxRetries, timeout: 5_000, fetchOptions: scenario.fetchOptions as never })
}

/**
 * The retry delay a case advertises: the real one on the first transport (what each SDK does with
 * it is tested there once), a short one on the others (what they test is the transport carrying
 * the retry, not the wait).
 */
const retryDelay = (transport: Transport, real: number) => (transport === TRANSPORTS[0] ? real : 0.05)

/** Seconds between the end of one call and the start of the next. */
const gap = (before: CallRecord, after: CallRecord) => after.started - (before.started + (before.elapsed ?? 0))

for (const transport of TRANSPORTS) {
  describe(`provider-shaped faults on model calls (${transport})`, () => {
    it('raises openai RateLimitError with the 429 error object and x-ratelimit-* headers', async () => {
      const client = await openai(transport, { rules: [{ name: 'busy', route: CHAT, kind: 'rate_limit', delay: 1.5 }] })
      const error = (await client.chat.completions.create({ model: 'gpt-x', messages }).catch((e: unknown) => e)) as InstanceType<typeof OpenAI.RateLimitError>
      expect(error).toBeInstanceOf(OpenAI.RateLimitError)
      expect([error.status, error.type, error.code, error.param]).toEqual([429, 'requests', 'rate_limit_exceeded', null])
      expect(error.message).toBe('429 Rate limit reached on requests per min (RPM). Please try again in 1.5s.')
      expect(error.requestID).toMatch(/^req_[0-9a-f]{16}$/)
      expect(Object.fromEntries([...error.headers!].filter(([name]) => name.startsWith('x-ratelimit') || name.startsWith('retry-after')))).toEqual({
        'retry-after': '2',
        'retry-after-ms': '1500',
        'x-ratelimit-remaining-requests': '0',
        'x-ratelimit-reset-requests': '1.5s',
      })
      expect((await scenario!.settled()).calls[0]).toMatchObject({ status: 429, injected: true, retryAfter: 1.5, executed: false })
    })

    it('the openai SDK honours retry-after-ms and succeeds on its retry, both calls in the report', async () => {
      const delay = retryDelay(transport, 0.4)
      const client = await openai(transport, { rules: [{ name: 'busy', route: RESPONSES, kind: 'rate_limit', calls: [1], delay }] }, 2)
      const response = await client.responses.create({ model: 'gpt-r', input: 'Say hello.' })
      expect(response.output_text).toBe(WORDS.join(''))
      const calls = (await scenario!.settled()).calls
      expect(calls.map((call) => [call.status, call.injected])).toEqual([
        [429, true],
        [200, false],
      ])
      expect(gap(calls[0]!, calls[1]!)).toBeGreaterThanOrEqual(delay - 0.02)
    })

    it.each([
      ['unavailable', 503, 'The server is overloaded or not ready yet.'],
      ['overloaded', 503, 'The engine is currently overloaded, please try again later.'],
      ['timeout', 504, 'Gateway timeout: the request took too long to process.'],
    ] as const)('raises openai InternalServerError on %s (%i, server_error)', async (kind, status, message) => {
      const client = await openai(transport, { rules: [{ name: kind, route: CHAT, kind }] })
      const error = (await client.chat.completions.create({ model: 'gpt-x', messages }).catch((e: unknown) => e)) as InstanceType<typeof OpenAI.InternalServerError>
      expect(error).toBeInstanceOf(OpenAI.InternalServerError)
      expect([error.status, error.type, error.message]).toEqual([status, 'server_error', `${status} ${message}`])
    })

    it('raises Anthropic RateLimitError with rate_limit_error and anthropic-ratelimit-* headers', async () => {
      const client = await anthropic(transport, { rules: [{ name: 'busy', route: MESSAGES, kind: 'rate_limit', delay: 3 }] })
      const before = Date.now()
      const error = (await client.messages.create(claude).catch((e: unknown) => e)) as InstanceType<typeof Anthropic.RateLimitError>
      expect(error).toBeInstanceOf(Anthropic.RateLimitError)
      expect([error.status, error.type, error.apiMessage]).toEqual([429, 'rate_limit_error', 'Number of requests has exceeded your rate limit. Please try again later.'])
      expect(error.requestID).toMatch(/^req_[0-9a-f]{24}$/)
      expect(error.error).toEqual({ type: 'error', error: { type: 'rate_limit_error', message: error.apiMessage }, request_id: error.requestID })
      const headers = error.headers!
      expect([headers.get('retry-after'), headers.get('anthropic-ratelimit-requests-remaining')]).toEqual(['3', '0'])
      const reset = Date.parse(headers.get('anthropic-ratelimit-requests-reset')!)
      expect(reset - before).toBeGreaterThanOrEqual(2_000)
      expect(reset - before).toBeLessThanOrEqual(5_000)
    })

    it('raises Anthropic OverloadedError on 529, and the SDK\'s retry succeeds after the advertised delay', async () => {
      let client = await anthropic(transport, { rules: [{ name: 'busy', route: MESSAGES, kind: 'overloaded', delay: 0.3 }] })
      const error = (await client.messages.create(claude).catch((e: unknown) => e)) as InstanceType<typeof Anthropic.OverloadedError>
      expect(error).toBeInstanceOf(Anthropic.OverloadedError)
      expect([error.status, error.type, error.apiMessage, error.headers?.get('retry-after-ms')]).toEqual([529, 'overloaded_error', 'Overloaded', '300'])
      await scenario!.close()

      const delay = retryDelay(transport, 0.3)
      client = await anthropic(transport, { rules: [{ name: 'busy', route: MESSAGES, kind: 'overloaded', calls: [1], delay }] }, 2)
      const message = await client.messages.create(claude)
      expect(message.content).toEqual([{ type: 'text', text: WORDS.join('') }])
      const calls = (await scenario!.settled()).calls
      expect(calls.map((call) => [call.status, call.injected, call.kind])).toEqual([
        [529, true, 'overloaded'],
        [200, false, null],
      ])
      expect(gap(calls[0]!, calls[1]!)).toBeGreaterThanOrEqual(delay - 0.02)
    })

    it.each([
      ['unavailable', Anthropic.ServiceUnavailableError, 503, 'api_error', 'Service unavailable'],
      ['timeout', Anthropic.GatewayTimeoutError, 504, 'timeout_error', 'Request timed out'],
    ] as const)('raises Anthropic\'s typed error on %s', async (kind, type, status, errorType, message) => {
      const client = await anthropic(transport, { rules: [{ name: kind, route: MESSAGES, kind }] })
      const error = (await client.messages.create(claude).catch((e: unknown) => e)) as InstanceType<typeof Anthropic.APIError>
      expect(error).toBeInstanceOf(type)
      expect([error.status, error.type, error.apiMessage]).toEqual([status, errorType, message])
    })

    it('answers unavailable 503 on a model call as on any other route, each body in its own shape (#36 item 9)', async () => {
      scenario = await scenarios.start(transport, { rules: [{ name: 'down', route: '*', kind: 'unavailable' }] })
      const post = (path: string, headers: Record<string, string> = {}) =>
        fetch(`${scenario!.base}${path}`, { method: 'POST', body: JSON.stringify({ model: 'm', messages }), headers: { 'content-type': 'application/json', ...headers }, ...(scenario!.fetchOptions as RequestInit) })
      const answers = [await post('/v1/chat/completions'), await post('/v1/messages', { 'anthropic-version': '2023-06-01' }), await post('/v1/embeddings')]
      expect(answers.map((response) => response.status)).toEqual([503, 503, 503])
      const [chat, messagesApi, other] = await Promise.all(answers.map((response) => response.json()))
      expect(chat).toEqual({ error: { message: 'The server is overloaded or not ready yet.', type: 'server_error', param: null, code: null } })
      expect(messagesApi).toMatchObject({ type: 'error', error: { type: 'api_error', message: 'Service unavailable' } })
      expect(other).toEqual({ error: { type: 'service_unavailable', message: 'Service unavailable.' } })
    })

    it('keeps the generic answers on a route that is not a model call', async () => {
      scenario = await scenarios.start(transport, { rules: [{ name: 'busy', route: 'POST /v1/embeddings', kind: 'overloaded' }] })
      const response = await fetch(`${scenario.base}/v1/embeddings`, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' }, ...(scenario.fetchOptions as RequestInit) })
      expect(response.status).toBe(503)
      expect(response.headers.get('x-request-id')).toBeNull()
      expect(await response.json()).toEqual({ error: { type: 'overloaded', message: 'Service overloaded. Please try again later.' } })
    })
  })
}

describe('retryAfterRespected on an overloaded provider (529)', () => {
  /** An agent that catches the SDK's error and calls again at once: it ignores the advertised delay. */
  async function impatient(client: Anthropic): Promise<void> {
    await client.messages.create(claude).catch((error: unknown) => expect(error).toBeInstanceOf(Anthropic.OverloadedError))
    await client.messages.create(claude)
  }

  it("fails an agent that retries an injected 529 before its retry-after-ms, and passes the SDK's own retry", async () => {
    let client = await anthropic('reverse', { rules: [{ name: 'busy', route: MESSAGES, kind: 'overloaded', calls: [1], delay: 1 }] })
    await impatient(client)
    let report = await scenario!.settled()
    expect(report.calls.map((call) => [call.status, call.retryAfter])).toEqual([
      [529, 1],
      [200, null],
    ])
    expect(contract(report).retryAfterRespected().checks[0]).toEqual({ name: 'Retry-after respected', passed: false, detail: '1 retry(s) occurred before the advertised delay' })

    client = await anthropic('reverse', { rules: [{ name: 'busy', route: MESSAGES, kind: 'overloaded', calls: [1], delay: 0.3 }] }, 2)
    await client.messages.create(claude)
    report = await scenario!.settled()
    expect(contract(report).retryAfterRespected().checks[0]).toMatchObject({ passed: true, detail: '0 retry(s) occurred before the advertised delay' })
  })

  it("records the retry-after of a real upstream's 529 and fails a retry made before it", async () => {
    // Anthropic's overloaded answer, once, with the delay it asks for; then the answer.
    let calls = 0
    const server = closingServer(
      http.createServer((req, res) => {
        req.resume()
        req.on('end', () => {
          if (++calls === 1) {
            res.writeHead(529, { 'content-type': 'application/json', 'retry-after': '2', 'retry-after-ms': '1500' })
            return void res.end(JSON.stringify({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }))
          }
          res.writeHead(200, { 'content-type': 'application/json' })
          res.end(JSON.stringify({ id: 'msg_1', type: 'message', role: 'assistant', model: 'claude-x', content: [{ type: 'text', text: 'Hi' }], stop_reason: 'end_turn', usage: { input_tokens: 3, output_tokens: 1 } }))
        })
      }),
    )
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const storm = createStorm({})
    const opened = closing(await openTransport('reverse', storm, `http://127.0.0.1:${(server.address() as AddressInfo).port}`))
    await impatient(new Anthropic({ apiKey: 'sk-ant-test', baseURL: opened.base, maxRetries: 0, timeout: 5_000 }))
    const report = storm.report()
    expect(report.calls.map((call) => [call.status, call.injected, call.retryAfter])).toEqual([
      [529, false, 1.5],
      [200, false, null],
    ])
    expect(contract(report).retryAfterRespected().checks[0]).toMatchObject({ passed: false, detail: '1 retry(s) occurred before the advertised delay' })
  })
})
