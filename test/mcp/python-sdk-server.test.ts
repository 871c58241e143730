/**
 * Commit evidence from a Python MCP server (issue #17, item 4): a tool of the official Python SDK
 * reports its commit with the Python effects helper, from the HTTP request in its Context, and
 * the proxy correlates it with the tool call. Needs the Python `mcp` package: `.ci/run` installs
 * it into `node_modules/.cache/toolstorm-py` (.ci/python-venv.sh; `TOOLSTORM_PYTHON` overrides).
 */
import { spawn } from 'node:child_process'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { contract } from '../../src/contracts/contract.js'
import { startProxy } from '../../src/proxy/proxy-server.js'
import { ROOT } from '../helpers/cli.js'
import { connectMcpClient } from '../helpers/mcp-server.js'
import { PYTHON, hasPythonModules } from '../helpers/python.js'
import { freePort, waitForPort } from '../helpers/redis-server.js'
import { closing, closingChild } from '../helpers/teardown.js'

const hasPythonSdk = hasPythonModules('mcp')

describe.skipIf(!hasPythonSdk)('a Python SDK MCP server behind the proxy', () => {
  it('reports the commit of a tool call whose answer was lost, so the retry shows as a duplicate effect', async () => {
    const port = await freePort()
    const proxy = closing(await startProxy({ targets: [`http://127.0.0.1:${port}`], config: { rules: [{ name: 'lost', route: 'tools/call create_shipment', kind: 'response_lost', calls: [1] }] } }))
    closingChild(spawn(PYTHON, [path.join(ROOT, 'fixtures/python-mcp-server/server.py'), String(port), proxy.adminUrl], { stdio: 'ignore' }))
    await waitForPort(port, Date.now() + 20_000, 'the Python MCP server')
    const { client } = await connectMcpClient(`${proxy.url}/mcp`)
    await expect(client.callTool({ name: 'create_shipment', arguments: { order_id: 'o-1' } })).rejects.toThrow()
    const retried = await client.callTool({ name: 'create_shipment', arguments: { order_id: 'o-1' } })
    expect(JSON.stringify(retried.content)).toContain('shp_2')
    await client.close()
    const report = proxy.storm.report()
    const toolCalls = report.calls.filter((call) => call.route === 'tools/call create_shipment')
    expect(toolCalls.map((call) => [call.outcome, call.executed])).toEqual([
      ['reset', true],
      ['response', true],
    ])
    expect(report.effects.map((effect) => [effect.name, effect.key, effect.call])).toEqual(toolCalls.map((call) => ['shipment', 'o-1', call.id]))
    expect(contract(report).noDuplicateEffects().toJSON().passed).toBe(false)
  }, 60_000)
})
