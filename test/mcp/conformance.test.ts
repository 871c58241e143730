/**
 * The official MCP conformance suite (`@modelcontextprotocol/conformance`, its server scenarios)
 * against the reference server (`@modelcontextprotocol/server-everything`): directly, through the
 * proxy, and from a cassette the proxy recorded. The suite needs Node 22 or later; `.ci/run` runs
 * this file on Node 22 (and Node 24 runs the whole integration project). On Node 20 it is skipped.
 *
 * The reference server does not implement every scenario's tools (the suite's own everything-server
 * does, but it is not published), so what is held here is the difference toolstorm makes: through
 * the proxy every scenario passes that passes directly, and DNS-rebinding protection passes too
 * (the proxy refuses the rebound Host, #37); from the cassette, the scenarios listed below.
 */
import { spawn } from 'node:child_process'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { createCassetteRecorder } from '../../src/cassette/record/cassette-recorder.js'
import { startReplayServer } from '../../src/proxy/replay/replay-server.js'
import { createStorm } from '../../src/create-storm.js'
import { startProxy } from '../../src/proxy/proxy-server.js'
import { ROOT } from '../helpers/cli.js'
import { freePort, waitForPort } from '../helpers/redis-server.js'
import { closing, closingChild, temporaryFolder } from '../helpers/teardown.js'

const NODE_MAJOR = Number(process.versions.node.split('.')[0])
const SUITE = path.join(ROOT, 'node_modules/@modelcontextprotocol/conformance/dist/index.js')
const EVERYTHING = path.join(ROOT, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js')

/** Each scenario's result: passed when none of its checks failed. */
type Results = Map<string, boolean>

/** Run the suite's server scenarios against `url`; the scenario lines of its summary. */
async function runSuite(url: string): Promise<Results> {
  const cwd = await temporaryFolder('toolstorm-conformance-')
  const child = spawn(process.execPath, [SUITE, 'server', '--url', url], { cwd, stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  child.stdout.on('data', (chunk: Buffer) => (output += chunk))
  child.stderr.on('data', (chunk: Buffer) => (output += chunk))
  await new Promise((resolve) => child.once('close', resolve))
  const results: Results = new Map()
  for (const match of output.matchAll(/^[✓✗] ([\w-]+): (\d+) passed, (\d+) failed$/gmu)) results.set(match[1] as string, match[3] === '0')
  if (results.size === 0) throw new Error(`the conformance suite printed no summary:\n${output}`)
  return results
}

function passed(results: Results): string[] {
  return [...results].filter(([, ok]) => ok).map(([name]) => name)
}

async function startEverything(): Promise<string> {
  const port = await freePort()
  closingChild(spawn(process.execPath, [EVERYTHING, 'streamableHttp'], { env: { ...process.env, PORT: String(port) }, stdio: 'ignore' }))
  await waitForPort(port, Date.now() + 20_000, 'server-everything')
  return `http://127.0.0.1:${port}`
}

describe.skipIf(NODE_MAJOR < 22)(`the MCP conformance suite's server scenarios (needs Node 22+; this is Node ${NODE_MAJOR})`, () => {
  it('pass through the proxy wherever they pass directly, DNS-rebinding protection included, and from a recorded cassette', async () => {
    const origin = await startEverything()
    const direct = await runSuite(`${origin}/mcp`)

    const storm = createStorm({})
    const recorder = createCassetteRecorder(storm, { urlForm: 'origin' })
    const proxy = closing(await startProxy({ targets: [origin], storm, observer: recorder.observer }))
    const proxied = await runSuite(`${proxy.url}/mcp`)
    await proxy.close()
    await recorder.close()

    const replay = closing(await startReplayServer(await recorder.cassette(), { order: 'any', allowUnused: true, allowRepeats: true }))
    const replayed = await runSuite(`${replay.url}/mcp`)
    // The numbers the issue asks for, in the test's output (server-everything 2026.8.31: 11, 12 and 12 of 30).
    console.log(`conformance server scenarios passed: direct ${passed(direct).length}/${direct.size}, through the proxy ${passed(proxied).length}/${proxied.size}, from the cassette ${passed(replayed).length}/${replayed.size}`)

    expect([...proxied.keys()]).toEqual([...direct.keys()])
    expect(passed(direct)).toContain('server-initialize')
    // The reference server has no Host check of its own: behind the proxy, the proxy's refuses the rebound name.
    expect(direct.get('dns-rebinding-protection')).toBe(false)
    expect(passed(proxied)).toEqual([...direct.keys()].filter((name) => direct.get(name) || name === 'dns-rebinding-protection'))
    expect(passed(replayed)).toEqual(passed(proxied))
  }, 180_000)
})
