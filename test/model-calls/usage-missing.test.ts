/**
 * A token budget cannot pass on a model call whose provider answered it in full without usage
 * (an OpenAI chat stream without `stream_options.include_usage`), whatever the client got of it:
 * a fault that cut the stream (the proxy read the rest on: the provider finished its answer) or
 * lost the answer after the provider gave it is no break-off before the usage. Only an answer
 * that really stopped before its end (the client left on its own, the upstream let go) counts as
 * far as it was reported.
 */
import OpenAI from 'openai'
import { describe, expect, it } from 'vitest'
import { contract } from '../../src/contracts/contract.js'
import { drain } from '../helpers/drain.js'
import { modelScenarios, CHAT } from '../helpers/model-scenario.js'
import type { Transport } from '../helpers/transports.js'

const scenarios = modelScenarios()
const messages = [{ role: 'user' as const, content: 'Say hello.' }]
const WITHOUT_USAGE = 'Cannot count tokens: 1 model call(s) answered without usage'

for (const transport of ['intercept', 'reverse'] as const satisfies readonly Transport[]) {
  describe(`a model call answered in full without usage (${transport})`, () => {
    const client = (base: string, fetchOptions: object) => new OpenAI({ apiKey: 'sk-test', baseURL: `${base}/v1`, maxRetries: 0, timeout: 10_000, fetchOptions: fetchOptions as never })

    it('fails the token budget when a stream_cut cut it and the agent gave up', async () => {
      const scenario = await scenarios.start(transport, { rules: [{ name: 'cut', route: CHAT, kind: 'stream_cut', after: 2 }] })
      const { items, error } = await drain(await client(scenario.base, scenario.fetchOptions).chat.completions.create({ model: 'gpt-x', messages, stream: true }))
      expect([items.length, error?.message]).toEqual([2, 'terminated'])
      const report = await scenario.settled()
      expect(report.calls[0]).toMatchObject({ outcome: 'error', error: 'STREAM_CUT', model: { inputTokens: null, outputTokens: null, usageMissing: true } })
      expect(contract(report).atMostTokens(1000).checks[0]).toEqual({ name: 'Token budget', passed: false, detail: WITHOUT_USAGE })
    })

    it('fails the token budget when response_lost answered the client a 500 after the provider answered', async () => {
      const scenario = await scenarios.start(transport, { rules: [{ name: 'lost', route: CHAT, kind: 'response_lost', status: 500 }] })
      const error = await client(scenario.base, scenario.fetchOptions).chat.completions.create({ model: 'gpt-x', messages, stream: true }).catch((e: unknown) => e)
      expect(error).toBeInstanceOf(OpenAI.InternalServerError)
      const report = await scenario.settled()
      expect(report.calls[0]).toMatchObject({ status: 500, upstreamStatus: 200, model: { inputTokens: null, outputTokens: null, usageMissing: true } })
      expect(contract(report).atMostTokens(1000).checks[0]).toEqual({ name: 'Token budget', passed: false, detail: WITHOUT_USAGE })
    })

    it('fails the recovery token budget when a model call in the recovery was cut and answered without usage', async () => {
      // The tool fails once; the agent asks the model again (a stream the fault cuts), then calls the tool again.
      const scenario = await scenarios.start(transport, {
        rules: [
          { name: 'down', route: 'GET /ticks', kind: 'unavailable', calls: [1] },
          { name: 'cut', route: CHAT, kind: 'stream_cut', after: 2 },
        ],
      })
      const tool = () => fetch(`${scenario.base}/ticks?count=1`, scenario.fetchOptions as RequestInit).then(async (response) => [response.status, await response.text()][0])
      expect(await tool()).toBe(503)
      const { error } = await drain(await client(scenario.base, scenario.fetchOptions).chat.completions.create({ model: 'gpt-x', messages, stream: true }))
      expect(error?.message).toBe('terminated')
      expect(await tool()).toBe(200)
      const report = await scenario.settled()
      expect(report.recovery?.[0]).toMatchObject({ call: 1, recovered: true, calls: 2, modelCalls: 1, unmeasured: 1 })
      expect(contract(report).maxRecoveryTokens(1000).checks[0]).toEqual({ name: 'Recovery token budget', passed: false, detail: 'Cannot count tokens: call 1 recovered through model calls answered without usage' })
    })

    it('still counts a stream the client left before its end as far as it was reported', async () => {
      const scenario = await scenarios.start(transport, {}, { gapMs: 100 })
      const stream = await client(scenario.base, scenario.fetchOptions).chat.completions.create({ model: 'gpt-x', messages, stream: true })
      for await (const _chunk of stream) break
      const report = await scenario.settled()
      expect(report.calls[0]).toMatchObject({ outcome: 'cancelled', model: { inputTokens: null, outputTokens: null } })
      expect(report.calls[0]?.model?.usageMissing).toBeUndefined()
      expect(contract(report).atMostTokens(1000).checks[0]).toEqual({ name: 'Token budget', passed: true, detail: '0 / 1000 tokens; 1 model call(s) broke off before reporting usage' })
    })
  })
}
