/**
 * `explore({ command })` on an MCP agent (the official SDK's client, fixtures/explore/mcp-agent.ts)
 * in front of the tests' MCP server (test/helpers/mcp-server.ts, stateful, answering in event
 * streams), in reverse mode: the agent's base URL is $TOOLSTORM_PROXY_URL, which names its run.
 * Explored per tool (`routes: ['tools/call *']`), with the MCP faults where they apply.
 */
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { reportEffect } from '../../src/effects/toolstorm-effects.js'
import { explore } from '../../src/explore/explore.js'
import { ROOT } from '../helpers/cli.js'
import { compiledAgent } from './compiled-agent.js'
import { startMcpServer } from '../helpers/mcp-server.js'
import { closing } from '../helpers/teardown.js'

// Bundled once (compiled-agent.ts): each run starts plain node, not the tsx loader.
const AGENT = await compiledAgent(path.join(ROOT, 'fixtures/explore/mcp-agent.ts'))
const ANY = ['timeout', 'rate_limit', 'unavailable', 'reset', 'latency']
const MCP = ['tool_error', 'rpc_error', 'session_expired']

describe('explore: an MCP agent, per tool', { timeout: 240_000 }, () => {
  it('tries each tool with the faults of an MCP tool call, and finds the duplicate shipment and the unchecked structuredContent', async () => {
    // The server reports each commit to the newest proxy in this process: explore's.
    const server = closing(await startMcpServer({ stateful: true, json: false, onCommit: (headers, name, key) => reportEffect({ headers }, name, key) }))
    const { result } = await explore({ command: AGENT, proxy: { targets: [server.origin] }, routes: ['tools/call *'], jobs: 4 })
    const faultsOn = (tool: string) => result.variations.filter((variation) => variation.steps[0]!.route === `tools/call ${tool}`).map((variation) => variation.steps[0]!.fault)
    expect(result.sites.filter((site) => site.route.startsWith('tools/call')).map((site) => [site.route, site.kind.mcp])).toEqual([
      ['tools/call get_quote', { method: 'tools/call', tool: 'get_quote', id: true, session: true }],
      ['tools/call create_shipment', { method: 'tools/call', tool: 'create_shipment', id: true, session: true }],
      ['tools/call track_shipment', { method: 'tools/call', tool: 'track_shipment', id: true, session: true }],
    ])
    // A tool call is a write; only track_shipment answers structuredContent (schema_drift).
    expect(faultsOn('create_shipment')).toEqual([...ANY, 'response_lost', ...MCP])
    expect(faultsOn('track_shipment')).toEqual([...ANY, 'response_lost', 'schema_drift', ...MCP])
    expect(faultsOn('get_quote')).toEqual([...ANY, 'response_lost', ...MCP])
    expect(result.skipped.filter((skip) => skip.reason === 'route-filter').map((skip) => skip.what)).toEqual(expect.arrayContaining(['initialize', 'notifications/initialized']))
    const failed = (tool: string) => result.variations.filter((variation) => variation.status === 'fail' && variation.steps[0]!.route === `tools/call ${tool}`)
    const lost = failed('create_shipment').find((variation) => variation.steps[0]!.fault === 'response_lost')
    expect(lost?.failed.map((check) => check.check)).toEqual(['No duplicate side effects'])
    expect(failed('track_shipment').map((variation) => variation.steps[0]!.fault)).toContain('schema_drift')
    expect(result.summary.notExercised).toBe(0)
  })

  it('raises no false alarm on the corrected agent', async () => {
    const server = closing(await startMcpServer({ stateful: true, json: false, onCommit: (headers, name, key) => reportEffect({ headers }, name, key) }))
    const { result } = await explore({ command: [...AGENT, '--fixed'], proxy: { targets: [server.origin] }, routes: ['tools/call *'], jobs: 4 })
    expect(result.variations.filter((variation) => variation.status !== 'pass').map((variation) => [variation.id, variation.steps[0]!.route, variation.steps[0]!.fault, variation.failed, variation.output])).toEqual([])
    expect(result.summary).toMatchObject({ variations: 28, failed: 0, notExercised: 0 })
  })
})
