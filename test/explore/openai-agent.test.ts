/**
 * `toolstorm explore` on a model-call agent: the openai Python SDK streaming a chat completion
 * with text and a tool call's arguments (fixtures/explore/openai-agent.py, its own fake model).
 * The streaming faults are in the space, the SDK's own retries survive the rest, and the budgets
 * explore is given judge what recovering cost.
 */
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { ROOT } from '../helpers/cli.js'
import { PYTHON, hasPythonModules } from '../helpers/python.js'
import { exploreCli } from './explore-cli.js'

const AGENT = [PYTHON, path.join(ROOT, 'fixtures/explore/openai-agent.py')]

describe.skipIf(!hasPythonModules('openai'))('explore: an openai SDK agent streaming', { timeout: 240_000 }, () => {
  it('tries the stream faults on the streamed call and finds the ones the agent does not survive', async () => {
    const explored = await exploreCli(['--jobs', '4'], AGENT)
    expect(explored.code, explored.stderr).toBe(1)
    const result = explored.result!
    expect(result.sites.map((site) => [site.route, site.kind.model])).toEqual([['POST /v1/chat/completions', { api: 'chat.completions', provider: 'openai', streamed: true, deltas: ['text', 'tool_arguments'] }]])
    const verdicts = Object.fromEntries(result.variations.map((variation) => [variation.steps[0]!.fault, variation.status]))
    expect(verdicts).toEqual({
      // The provider-shaped failures the SDK retries by itself.
      timeout: 'pass',
      rate_limit: 'pass',
      unavailable: 'pass',
      reset: 'pass',
      latency: 'pass',
      overloaded: 'pass',
      // A stream that broke off inside its text or inside the tool call's arguments, or went silent: the SDK does not retry it.
      'stream_cut@text': 'fail',
      'stream_cut@tool_arguments': 'fail',
      stream_stall: 'fail',
      drop_terminal: 'pass',
    })
    // What recovering cost: the SDK's retry, one model call of 30 tokens.
    const retried = result.variations.find((variation) => variation.steps[0]!.fault === 'rate_limit')!
    expect(retried.recovery).toMatchObject({ calls: 1, modelCalls: 1, tokens: 30, recovered: true })
  })

  it('passes the stream faults with the corrected agent, and fails its recoveries on the budgets it is given', async () => {
    // The faults the agent itself must recover from (the SDK retries the others for both versions, as above).
    const fixed = await exploreCli(['--jobs', '4', '--faults', 'stream_cut@text,stream_cut@tool_arguments,stream_stall,drop_terminal'], [...AGENT, '--fixed'])
    expect(fixed.code, fixed.stdout).toBe(0)
    expect(fixed.result!.summary).toMatchObject({ variations: 4, failed: 0, notExercised: 0 })
    const budgeted = await exploreCli(['--jobs', '4', '--faults', 'rate_limit,stream_cut@tool_arguments', '--max-model-calls', '1', '--max-recovery-tokens', '20'], [...AGENT, '--fixed'])
    expect(budgeted.code).toBe(1)
    for (const variation of budgeted.result!.variations) {
      expect(variation.failed.map((check) => check.check)).toEqual(['Model-call budget', 'Recovery token budget'])
      expect(variation.failed[0]!.detail).toBe('2 / 1 model calls')
    }
  })
})
