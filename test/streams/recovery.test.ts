/**
 * Recovery cost (#26 item 3): for each triggered fault the report says what getting past it took
 * (calls, model calls, tokens, seconds until the faulted route's next success, or
 * `recovered: false`), and `maxRecoveryTokens` / `check --max-recovery-tokens` bound it.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import OpenAI from 'openai'
import { describe, expect, it } from 'vitest'
import { contract } from '../../src/contracts/contract.js'
import { parseContractRequest, runContract } from '../../src/contracts/contract-request.js'
import type { StormConfigInput } from '../../src/engine/schema/config.js'
import { runCli } from '../helpers/cli.js'
import { modelScenarios, CHAT, type ModelScenario } from '../helpers/model-scenario.js'
import type { Transport } from '../helpers/transports.js'
import { TOOL, USAGE, WORDS } from '../helpers/model-upstream.js'

const scenarios = modelScenarios()
let scenario: ModelScenario | null = null

const messages = [{ role: 'user' as const, content: 'Weather in Paris?' }]
const tools = [{ type: 'function' as const, function: { name: TOOL.name, parameters: { type: 'object', properties: { city: { type: 'string' } } } } }]
const CHAT_TOKENS = USAGE.chat.prompt_tokens + USAGE.chat.completion_tokens

async function openai(transport: Transport, config: StormConfigInput, maxRetries = 0) {
  scenario = await scenarios.start(transport, config, { gapMs: 2 })
  return new OpenAI({ apiKey: 'sk-test', baseURL: `${scenario.base}/v1`, maxRetries, timeout: 5_000, fetchOptions: scenario.fetchOptions as never })
}

/** An agent's step: stream the tool call; when the stream breaks, ask again without streaming. */
async function toolCallWithFallback(client: OpenAI): Promise<string> {
  try {
    let args = ''
    for await (const chunk of await client.chat.completions.create({ model: 'gpt-x', messages, tools, stream: true, stream_options: { include_usage: true } })) args += chunk.choices[0]?.delta.tool_calls?.[0]?.function?.arguments ?? ''
    return args
  } catch {
    const answer = await client.chat.completions.create({ model: 'gpt-x', messages, tools })
    const call = answer.choices[0]?.message.tool_calls?.[0]
    return call?.type === 'function' ? call.function.arguments : ''
  }
}

for (const transport of ['intercept', 'reverse'] as const satisfies readonly Transport[]) {
  describe(`recovery cost in the report (${transport})`, () => {
    it('counts the SDK\'s retry after a 429: one call, one model call, its tokens, the seconds until it succeeded', async () => {
      // The SDK's real wait once (test/model-calls/provider-errors.test.ts tests it per SDK); a short one on the second transport.
      const delay = transport === 'intercept' ? 0.3 : 0.05
      const client = await openai(transport, { rules: [{ name: 'busy', route: CHAT, kind: 'rate_limit', calls: [1], delay }] }, 2)
      await client.chat.completions.create({ model: 'gpt-x', messages: [{ role: 'user', content: 'Say hello.' }] })
      const report = await scenario!.settled()
      expect(report.recovery).toEqual([
        { call: 1, rule: 'busy', route: CHAT, recovered: true, calls: 1, modelCalls: 1, inputTokens: USAGE.chat.prompt_tokens, outputTokens: USAGE.chat.completion_tokens, seconds: expect.any(Number) as unknown },
      ])
      // The SDK waited retry-after-ms before retrying; the retry itself takes a moment more.
      expect(report.recovery![0]!.seconds).toBeGreaterThanOrEqual(delay - 0.02)
      expect(contract(report).maxRecoveryTokens(CHAT_TOKENS).passed).toBe(true)
    })

    it('counts an agent\'s fallback after a stream cut inside the tool arguments, and the contract bounds it', async () => {
      const client = await openai(transport, { rules: [{ name: 'cut', route: CHAT, kind: 'stream_cut', at: 'tool_arguments', after: 1, calls: [1] }] })
      expect(await toolCallWithFallback(client)).toBe(TOOL.arguments.join(''))
      const report = await scenario!.settled()
      expect(report.recovery).toMatchObject([{ call: 1, rule: 'cut', recovered: true, calls: 1, modelCalls: 1, inputTokens: USAGE.chat.prompt_tokens, outputTokens: USAGE.chat.completion_tokens }])
      const [over] = contract(report).maxRecoveryTokens(CHAT_TOKENS - 1).checks
      expect(over).toMatchObject({ name: 'Recovery token budget', passed: false })
      expect(over?.detail).toMatch(new RegExp(`^${CHAT_TOKENS} / ${CHAT_TOKENS - 1} tokens, the most for one fault: call 1 \\(cut on POST /v1/chat/completions\\), recovered after 1 call\\(s\\), [\\d.]+s$`))
      // The same check as data (the Python package's `POST /contract`).
      expect(runContract(report, parseContractRequest({ checks: [{ type: 'maxRecoveryTokens', count: CHAT_TOKENS }] }, 'test')).passed).toBe(true)
    })

    it('says recovered: false when the faulted route never answered a success', async () => {
      const client = await openai(transport, { rules: [{ name: 'down', route: CHAT, kind: 'unavailable' }] }, 1)
      await expect(client.chat.completions.create({ model: 'gpt-x', messages })).rejects.toBeInstanceOf(OpenAI.InternalServerError)
      const report = await scenario!.settled()
      expect(report.recovery).toEqual([
        { call: 1, rule: 'down', route: CHAT, recovered: false, calls: 1, modelCalls: 1, inputTokens: 0, outputTokens: 0, seconds: null },
        { call: 2, rule: 'down', route: CHAT, recovered: false, calls: 0, modelCalls: 0, inputTokens: 0, outputTokens: 0, seconds: null },
      ])
    })

    it('fails the recovery budget closed when the recovery streamed without usage', async () => {
      const client = await openai(transport, { rules: [{ name: 'busy', route: CHAT, kind: 'rate_limit', calls: [1], delay: 0 }] })
      await client.chat.completions.create({ model: 'gpt-x', messages }).catch(() => null)
      for await (const chunk of await client.chat.completions.create({ model: 'gpt-x', messages: [{ role: 'user', content: 'Say hello.' }], stream: true })) void chunk
      const report = await scenario!.settled()
      expect(report.recovery).toMatchObject([{ call: 1, recovered: true, unmeasured: 1 }])
      expect(contract(report).maxRecoveryTokens(1_000_000).checks[0]).toMatchObject({ passed: false, detail: 'Cannot count tokens: call 1 recovered through model calls answered without usage' })
    })
  })
}

it('has no recovery in a report where no fault triggered', async () => {
  const client = await openai('intercept', { rules: [] })
  expect((await client.chat.completions.create({ model: 'gpt-x', messages: [{ role: 'user', content: 'Say hello.' }] })).choices[0]?.message.content).toBe(WORDS.join(''))
  expect((await scenario!.settled()).recovery).toBeUndefined()
})

it('toolstorm check --max-recovery-tokens fails a saved report whose recovery took more, and inspect lists the recovery', async () => {
  const client = await openai('reverse', { rules: [{ name: 'cut', route: CHAT, kind: 'stream_cut', at: 'tool_arguments', calls: [1] }] })
  await toolCallWithFallback(client)
  const dir = await mkdtemp(path.join(os.tmpdir(), 'toolstorm-recovery-'))
  try {
    const file = path.join(dir, 'report.json')
    await writeFile(file, JSON.stringify(await scenario!.settled()))
    const over = await runCli(['check', file, '--max-recovery-tokens', String(CHAT_TOKENS - 1)])
    expect(over.code).toBe(1)
    expect(over.stdout).toContain(`Recovery token budget: ${CHAT_TOKENS} / ${CHAT_TOKENS - 1} tokens`)
    const within = await runCli(['check', file, '--max-recovery-tokens', String(CHAT_TOKENS)])
    expect([within.code, within.stdout.split('\n')[0]]).toEqual([0, 'PASS'])
    const inspect = await runCli(['inspect', file])
    expect(inspect.stdout).toMatch(new RegExp(`  recovery from call 1 \\(cut on POST /v1/chat/completions\\): recovered in [\\d.]+s, 1 call\\(s\\), 1 model call\\(s\\), ${USAGE.chat.prompt_tokens} input \\+ ${USAGE.chat.completion_tokens} output tokens\n`))
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
})
