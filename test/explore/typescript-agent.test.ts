/**
 * `toolstorm explore` on a TypeScript agent with known bugs (fixtures/explore/agent.ts: its own
 * tool server and a fake model that streams, undici's ProxyAgent on HTTP_PROXY), and on its
 * corrected version (--fixed).
 */
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { ROOT } from '../helpers/cli.js'
import { compiledAgent } from './compiled-agent.js'
import { describeOf } from '../../src/explore/format-matrix.js'
import { byHand, exploreCli } from './explore-cli.js'

// Bundled once (compiled-agent.ts): each run starts plain node, not the tsx loader.
const AGENT = await compiledAgent(path.join(ROOT, 'fixtures/explore/agent.ts'))

// Each case runs the agent some 25-50 times (explore, then by hand): minutes on a loaded 2-core machine.
describe('explore: a TypeScript agent with known bugs', { timeout: 240_000 }, () => {
  it('finds exactly the failures one rule per run finds by hand, the model stream explored with the stream faults', async () => {
    const explored = await exploreCli(['--jobs', '4'], AGENT)
    expect(explored.code, explored.stderr).toBe(1)
    const result = explored.result!
    const faultsOn = (route: string) => result.variations.filter((variation) => variation.steps[0]!.route === route).map((variation) => variation.steps[0]!.fault)
    // A streamed chat completion carrying text deltas (no tool call): the stream faults apply, stream_cut@tool_arguments does not.
    expect(result.sites.find((site) => site.route === 'POST /v1/chat/completions')?.kind.model).toEqual({ api: 'chat.completions', provider: 'openai', streamed: true, deltas: ['text'] })
    expect(faultsOn('POST /v1/chat/completions')).toEqual(['timeout', 'rate_limit', 'unavailable', 'reset', 'latency', 'overloaded', 'stream_cut@text', 'stream_stall', 'drop_terminal'])
    expect(faultsOn('GET /customers/42')).toEqual(['timeout', 'rate_limit', 'unavailable', 'reset', 'latency', 'schema_drift'])
    expect(faultsOn('POST /charges')).toEqual(['timeout', 'rate_limit', 'unavailable', 'reset', 'latency', 'response_lost', 'schema_drift'])
    const hand = await byHand(AGENT, result.variations.map((variation) => variation.steps))
    const named = (statuses: readonly string[]) => result.variations.map((variation, index) => `${describeOf(variation)}: ${statuses[index]}`)
    expect(named(result.variations.map((variation) => variation.status))).toEqual(named(hand))
    const failing = (route: string) => result.variations.filter((variation) => variation.status === 'fail' && variation.steps[0]!.route === route).map((variation) => variation.steps[0]!.fault)
    // The bugs: a broken stream taken as the answer, an unchecked read, a charge sent twice.
    expect(failing('POST /v1/chat/completions')).toEqual(['stream_cut@text', 'stream_stall'])
    expect(failing('POST /charges')).toEqual(['response_lost', 'schema_drift'])
    expect(failing('GET /customers/42')).toContain('schema_drift')
  })

  it('raises no false alarm on the corrected agent', async () => {
    const explored = await exploreCli(['--jobs', '4'], [...AGENT, '--fixed'])
    expect(explored.code, explored.stdout).toBe(0)
    expect(explored.result!.summary).toMatchObject({ failed: 0, notExercised: 0, variations: 22 })
  })
})
