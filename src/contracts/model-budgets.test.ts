import { describe, expect, it } from 'vitest'
import { VirtualClock } from '../engine/clock.js'
import type { ModelCall } from '../engine/schema/report.js'
import { createStorm } from '../engine/storm.js'
import { contract } from './contract.js'

type Outcome = { status: number; outcome?: 'response' | 'error' | 'cancelled'; executed?: boolean; tokens?: [number | null, number | null] }

/** A report with one model call per entry (and one ordinary call that is not counted). */
function reportWith(...calls: Outcome[]) {
  const storm = createStorm({}, { clock: new VirtualClock() })
  storm.begin({ method: 'GET', url: new URL('http://tools.test/items/1'), headers: {} }).finish('response', 200)
  for (const call of calls) {
    const exchange = storm.begin({ method: 'POST', url: new URL('http://llm.test/v1/chat/completions'), headers: {} })
    const [inputTokens, outputTokens] = call.tokens ?? [null, null]
    const model: ModelCall = { provider: 'openai', api: 'chat.completions', model: 'gpt-x', inputTokens, outputTokens, streamed: true }
    exchange.record!.model = model
    if (call.executed !== false) {
      exchange.markExecuted()
      exchange.markUpstreamStatus(call.status)
    }
    exchange.finish(call.outcome ?? 'response', call.outcome === 'cancelled' ? null : call.status)
  }
  return storm.report()
}

describe('model-call and token budgets', () => {
  it('count model calls whatever their outcome', () => {
    const report = reportWith({ status: 200, tokens: [1, 1] }, { status: 429, executed: false }, { status: 200, outcome: 'error' })
    expect(contract(report).atMostModelCalls(3).atMostModelCalls(2).checks).toEqual([
      { name: 'Model-call budget', passed: true, detail: '3 / 3 model calls' },
      { name: 'Model-call budget', passed: false, detail: '3 / 2 model calls' },
    ])
  })

  it('sum input, output or total tokens from usage', () => {
    const report = reportWith({ status: 200, tokens: [11, 7] }, { status: 200, tokens: [33, 9] })
    expect(contract(report).atMostTokens(60).atMostTokens(59).atMostTokens(44, { kind: 'input' }).atMostTokens(15, { kind: 'output' }).checks).toEqual([
      { name: 'Token budget', passed: true, detail: '60 / 60 tokens' },
      { name: 'Token budget', passed: false, detail: '60 / 59 tokens' },
      { name: 'Token budget: input', passed: true, detail: '44 / 44 tokens' },
      { name: 'Token budget: output', passed: false, detail: '16 / 15 tokens' },
    ])
  })

  it('fail closed when a call was answered in full without usage', () => {
    const report = reportWith({ status: 200, tokens: [11, 7] }, { status: 200 })
    expect(contract(report).atMostTokens(1000).checks[0]).toEqual({ name: 'Token budget', passed: false, detail: 'Cannot count tokens: 1 model call(s) answered without usage' })
  })

  it('count calls that never got a 2xx as free and name calls that broke off before their usage', () => {
    const report = reportWith({ status: 200, tokens: [11, 7] }, { status: 503 }, { status: 429, executed: false }, { status: 200, outcome: 'error', tokens: [21, null] })
    expect(contract(report).atMostTokens(100).checks[0]).toEqual({ name: 'Token budget', passed: true, detail: '39 / 100 tokens; 1 model call(s) broke off before reporting usage' })
  })

  it('say so when no model call was recorded: an upper bound on none is no evidence of a frugal agent', () => {
    const none = 'no call was recorded as a model call (OpenAI chat completions, Responses, Anthropic messages; none when the storm records none, modelCalls: false)'
    expect(contract(reportWith()).atMostModelCalls(3).atMostTokens(1000).checks).toEqual([
      { name: 'Model-call budget', passed: true, detail: `0 / 3 model calls; ${none}` },
      { name: 'Token budget', passed: true, detail: `0 / 1000 tokens; ${none}` },
    ])
  })

  it('fail closed when calls past the 10,000 a report lists may be model calls over the limit', () => {
    const listed = Array.from({ length: 10_000 }, () => ({ status: 200, tokens: [1, 1] as [number, number] }))
    // An ordinary call and 10,000 model calls: the last model call is past the list.
    const report = reportWith(...listed)
    expect([report.calls.length, report.droppedCalls]).toEqual([10_000, 1])
    const unknown = '1 call(s) past the 10,000 a report lists were not itemized'
    expect(contract(report).atMostModelCalls(9_998).atMostModelCalls(9_999).atMostModelCalls(10_000).checks).toEqual([
      { name: 'Model-call budget', passed: false, detail: '9999 / 9998 model calls' },
      { name: 'Model-call budget', passed: false, detail: `9999 / 9999 model calls, but ${unknown}, so the count of model calls is unknown` },
      { name: 'Model-call budget', passed: true, detail: '9999 / 10000 model calls' },
    ])
    expect(contract(report).atMostTokens(100_000).maxRecoveryTokens(100_000).checks).toEqual([
      { name: 'Token budget', passed: false, detail: `19998 / 100000 tokens, but ${unknown}, so their tokens are unknown` },
      { name: 'Recovery token budget', passed: false, detail: `No fault triggered: nothing to recover from (limit 100000), but ${unknown}, so their faults and recoveries are unknown` },
    ])
  })

  it('reject negative limits and unknown token kinds with ERR_CONFIG_INVALID', () => {
    const c = contract(reportWith())
    const invalid = (message: string) => expect.objectContaining({ name: 'ConfigError', code: 'ERR_CONFIG_INVALID', message })
    expect(() => c.atMostModelCalls(-1)).toThrow(invalid('Failed to add a contract check: Model-call limit must be a nonnegative integer.'))
    expect(() => c.atMostTokens(1, { kind: 'cached' as 'input' })).toThrow(invalid('Failed to add a contract check: unknown token kind "cached". Use one of "input", "output", "total".'))
  })
})
