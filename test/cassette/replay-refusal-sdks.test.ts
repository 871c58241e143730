/**
 * A diverged replay fails the agent's first call at once: the refusal's status is one the model
 * SDKs do not retry (OpenAI and Anthropic, Node and Python; the AI SDK retries 408, 409, 429 and
 * 5xx alone), and `x-should-retry: false` says so to the SDKs that read it. The replay server's
 * table counts the requests it saw: one, not the SDK's 1 + maxRetries.
 */
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import Anthropic from '@anthropic-ai/sdk'
import OpenAI from 'openai'
import { beforeAll, describe, expect, it } from 'vitest'
import type { Cassette } from '../../src/cassette/format/cassette.js'
import { REPLAY_REFUSAL_STATUS } from '../../src/cassette/replay/replay-refusal.js'
import { startReplayServer, type ReplayServer } from '../../src/proxy/replay/replay-server.js'
import { recordThroughProxy, shippingTraffic } from '../helpers/cassette.js'
import { hasPythonModules, PYTHON } from '../helpers/python.js'
import { closing } from '../helpers/teardown.js'

let cassette: Cassette
beforeAll(async () => {
  // Any recording will do: a model call is not in it, so the first call diverges.
  cassette = (await recordThroughProxy('reverse', shippingTraffic)).cassette
})
/** The requests the replay saw: one row each in its table (rows with nothing seen are unused exchanges). */
function seen(server: ReplayServer): string[] {
  return server.verdict().rows.flatMap((row) => (row.seen === null ? [] : [`${row.seen} ${row.result}`]))
}

describe('a diverged replay fails the first SDK call without a retry', () => {
  it('the OpenAI Node SDK (maxRetries 2) throws on the first attempt with the cassette error code', async () => {
    const replay = closing(await startReplayServer(cassette))
    const client = new OpenAI({ apiKey: 'sk-test', baseURL: `${replay.url}/v1`, maxRetries: 2 })
    const error = await client.chat.completions.create({ model: 'gpt-x', messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(OpenAI.APIError)
    expect(error).toMatchObject({ status: REPLAY_REFUSAL_STATUS, code: 'ERR_CASSETTE_MISMATCH', type: 'cassette_mismatch' })
    expect((error as InstanceType<typeof OpenAI.APIError>).headers?.get('x-should-retry')).toBe('false')
    expect(seen(replay)).toEqual(['POST /v1/chat/completions mismatch: method differs (expected GET)'])
  })

  it('the Anthropic Node SDK (maxRetries 2) throws on the first attempt with the cassette error code', async () => {
    const replay = closing(await startReplayServer(cassette))
    const client = new Anthropic({ apiKey: 'sk-ant-test', baseURL: replay.url, maxRetries: 2 })
    const error = await client.messages.create({ model: 'claude-x', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(Anthropic.APIError)
    expect(error).toMatchObject({ status: REPLAY_REFUSAL_STATUS, error: { error: { code: 'ERR_CASSETTE_MISMATCH' } } })
    expect(seen(replay)).toEqual(['POST /v1/messages mismatch: method differs (expected GET)'])
  })

  it('the status alone stops the AI SDK: it is none of the statuses its APICallError calls retryable', () => {
    // @ai-sdk/provider 3.x: isRetryable = status 408 || 409 || 429 || >= 500 (it reads no x-should-retry).
    expect([408, 409, 429]).not.toContain(REPLAY_REFUSAL_STATUS)
    expect(REPLAY_REFUSAL_STATUS).toBeGreaterThanOrEqual(400)
    expect(REPLAY_REFUSAL_STATUS).toBeLessThan(500)
  })

  it.skipIf(!hasPythonModules('openai', 'anthropic'))('Python openai and anthropic (max_retries 2) raise on the first attempt', async () => {
    const replay = closing(await startReplayServer(cassette))
    const script = [
      'import sys, openai, anthropic',
      'base = sys.argv[1]',
      'try:',
      '    openai.OpenAI(api_key="sk-test", base_url=base + "/v1", max_retries=2).chat.completions.create(model="gpt-x", messages=[{"role": "user", "content": "hi"}])',
      'except openai.APIStatusError as e:',
      '    print("openai", e.status_code, e.body["code"])',
      'try:',
      '    anthropic.Anthropic(api_key="sk-ant-test", base_url=base, max_retries=2).messages.create(model="claude-x", max_tokens=16, messages=[{"role": "user", "content": "hi"}])',
      'except anthropic.APIStatusError as e:',
      '    print("anthropic", e.status_code, e.body["error"]["code"])',
    ].join('\n')
    const { stdout } = await promisify(execFile)(PYTHON, ['-c', script, replay.url], { timeout: 60_000 })
    expect(stdout).toBe(`openai ${REPLAY_REFUSAL_STATUS} ERR_CASSETTE_MISMATCH\nanthropic ${REPLAY_REFUSAL_STATUS} ERR_CASSETTE_MISMATCH\n`)
    // The first call diverged; the second was refused once (the replay already diverged), not retried.
    expect(seen(replay)).toHaveLength(2)
  })
})
