/**
 * A cut model stream's tokens do not depend on how fast the upstream streams (issue #36, item 5):
 * the client is cut at once, the proxy (or the interception) reads the rest of the upstream's
 * answer within a bound, and the call records the usage the provider sent for it. The same rule
 * and client, with the events sent at once or 150 ms apart, record the same usage.
 */
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import Anthropic from '@anthropic-ai/sdk'
import OpenAI from 'openai'
import { describe, expect, it } from 'vitest'
import { createStorm } from '../../src/create-storm.js'
import { READ_ON_BYTES } from '../../src/engine/streams/read-on.js'
import { drain } from '../helpers/drain.js'
import { closing, closingServer } from '../helpers/teardown.js'
import { openTransport } from '../helpers/transports.js'
import { modelScenarios, MESSAGES, CHAT } from '../helpers/model-scenario.js'
import { TRANSPORTS } from '../helpers/transports.js'
import { USAGE } from '../helpers/model-upstream.js'

const scenarios = modelScenarios()
const messages = [{ role: 'user' as const, content: 'Say hello.' }]
const PACES = [0, 150]

for (const transport of TRANSPORTS) {
  describe(`the tokens of a cut model stream (${transport})`, () => {
    it.each(PACES)('an OpenAI chat stream cut after 2 events records its whole usage, events %i ms apart', async (gapMs) => {
      const scenario = await scenarios.start(transport, { seed: 7, rules: [{ name: 'cut', route: CHAT, kind: 'stream_cut', after: 2 }] }, { gapMs })
      const client = new OpenAI({ apiKey: 'sk-test', baseURL: `${scenario.base}/v1`, maxRetries: 0, timeout: 10_000, fetchOptions: scenario.fetchOptions as never })
      const { items, error } = await drain(await client.chat.completions.create({ model: 'gpt-x', messages, stream: true, stream_options: { include_usage: true } }))
      const cutAt = performance.now()
      expect([items.length, error?.message]).toEqual([2, 'terminated'])
      // The client is cut when the fault says, not once the upstream is done.
      if (gapMs > 0) expect(scenario.upstream.sent.end ?? Infinity).toBeGreaterThan(cutAt)
      const call = (await scenario.settled()).calls[0]
      expect(call).toMatchObject({ outcome: 'error', error: 'STREAM_CUT', cut: { events: 2 } })
      expect(call?.model).toMatchObject({ inputTokens: USAGE.chat.prompt_tokens, outputTokens: USAGE.chat.completion_tokens })
    })

    it.each(PACES)('an Anthropic stream cut after 2 events records its whole usage, events %i ms apart', async (gapMs) => {
      const scenario = await scenarios.start(transport, { seed: 7, rules: [{ name: 'cut', route: MESSAGES, kind: 'stream_cut', after: 2 }] }, { gapMs })
      const client = new Anthropic({ apiKey: 'sk-ant-test', baseURL: scenario.base, maxRetries: 0, timeout: 10_000, fetchOptions: scenario.fetchOptions as never })
      const { error } = await drain(await client.messages.create({ model: 'claude-x', max_tokens: 64, messages, stream: true }))
      expect(error?.message).toBe('terminated')
      const call = (await scenario.settled()).calls[0]
      expect(call).toMatchObject({ outcome: 'error', error: 'STREAM_CUT', cut: { events: 2 } })
      const { input_tokens, cache_creation_input_tokens, cache_read_input_tokens, output_tokens } = USAGE.messages
      expect(call?.model).toMatchObject({ inputTokens: input_tokens + cache_creation_input_tokens + cache_read_input_tokens, outputTokens: output_tokens })
    })
  })
}

it("the admin API's report and contracts, read right after the cut, wait for the usage (150 ms apart)", async () => {
  const scenario = await scenarios.start('reverse', { rules: [{ name: 'cut', route: CHAT, kind: 'stream_cut', after: 2 }] }, { gapMs: 150 })
  const client = new OpenAI({ apiKey: 'sk-test', baseURL: `${scenario.base}/v1`, maxRetries: 0, timeout: 10_000 })
  const { error } = await drain(await client.chat.completions.create({ model: 'gpt-x', messages, stream: true, stream_options: { include_usage: true } }))
  expect(error?.message).toBe('terminated')
  const admin = (path: string, init: RequestInit = {}) => fetch(`${scenario.proxy!.adminUrl}${path}`, { ...init, headers: { authorization: `Bearer ${scenario.proxy!.token}`, 'content-type': 'application/json' } })
  const [report, contract] = await Promise.all([
    admin('/report').then((response) => response.json() as Promise<{ calls: Array<{ outcome: string; model: { inputTokens: number | null; outputTokens: number | null } }> }>),
    admin('/contract', { method: 'POST', body: JSON.stringify({ checks: [{ type: 'atMostTokens', count: 100 }] }) }).then((response) => response.json() as Promise<{ checks: Array<{ detail: string }> }>),
  ])
  expect(report.calls[0]).toMatchObject({ outcome: 'error', model: { inputTokens: USAGE.chat.prompt_tokens, outputTokens: USAGE.chat.completion_tokens } })
  expect(contract.checks[0]?.detail).toBe(`${USAGE.chat.prompt_tokens + USAGE.chat.completion_tokens} / 100 tokens`)
})

it('reads a cut stream on only up to its bound: usage sent past 4 MiB is not waited for, and the call ends', async () => {
  // Two chunks, filler past the byte bound, the usage, then silence with the connection held open.
  const server = closingServer(
    http.createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      const chunk = (fields: object) => `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm', ...fields })}\n\n`
      res.write(chunk({ choices: [{ index: 0, delta: { content: 'a' }, finish_reason: null }] }))
      res.write(chunk({ choices: [{ index: 0, delta: { content: 'b' }, finish_reason: null }] }))
      const filler = `: ${'x'.repeat(64 * 1024)}\n\n`
      let sent = 0
      const more = () => {
        while (sent <= 2 * READ_ON_BYTES) {
          sent += filler.length
          if (!res.write(filler)) return void res.once('drain', more)
        }
        res.write(chunk({ choices: [], usage: { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 } }))
      }
      more()
    }),
  )
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const upstream = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const storm = createStorm({ rules: [{ name: 'cut', route: CHAT, kind: 'stream_cut', after: 1 }] })
  const opened = closing(await openTransport('reverse', storm, upstream))
  const response = await fetch(`${opened.base}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"model":"m","stream":true}' })
  await expect(response.text()).rejects.toThrow('terminated')
  await storm.settled()
  const call = storm.report().calls[0]
  expect(call).toMatchObject({ outcome: 'error', error: 'STREAM_CUT', cut: { events: 1 } })
  expect(call?.model).toMatchObject({ inputTokens: null, outputTokens: null })
})

it('a proxy closed right after the cut finishes reading first, within its close grace (150 ms apart)', async () => {
  const scenario = await scenarios.start('reverse', { rules: [{ name: 'cut', route: CHAT, kind: 'stream_cut', after: 2 }] }, { gapMs: 150 })
  const client = new OpenAI({ apiKey: 'sk-test', baseURL: `${scenario.base}/v1`, maxRetries: 0, timeout: 10_000 })
  const { error } = await drain(await client.chat.completions.create({ model: 'gpt-x', messages, stream: true, stream_options: { include_usage: true } }))
  expect(error?.message).toBe('terminated')
  await scenario.proxy!.close()
  expect(scenario.storm.report().calls[0]?.model).toMatchObject({ inputTokens: USAGE.chat.prompt_tokens, outputTokens: USAGE.chat.completion_tokens })
})
