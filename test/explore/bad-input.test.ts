/**
 * `toolstorm explore` on bad input: each refusal names what was wrong and what to do, with its
 * exit code, before anything is explored; a run that hangs is killed, fails, and keeps what it
 * recorded.
 */
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { existsSync } from 'node:fs'
import { readFile, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { describe, expect, it, vi } from 'vitest'
import { Cassette } from '../../src/cassette/format/cassette.js'
import { exploreResultSchema, type ExploreResult } from '../../src/explore/explore-result.js'
import { BIN, ROOT, runCli } from '../helpers/cli.js'
import { PYTHON, hasPythonModules } from '../helpers/python.js'
import { closingChild, temporaryFolder } from '../helpers/teardown.js'
import { exploreCli } from './explore-cli.js'

/**
 * `toolstorm explore FLAGS` on the agent that hangs when GET /status fails, stopped with SIGINT once
 * a variation hangs (--verbose shows its output as it comes); its JSON and HTML outputs are in `json`, `page`.
 */
async function stoppedWhileHanging(flags: readonly string[]): Promise<{ code: number | null; stdout: string; stderr: string; json: string; page: string }> {
  const dir = await temporaryFolder('toolstorm-stop-')
  const json = path.join(dir, 'result.json')
  const page = path.join(dir, 'result.html')
  const child = closingChild(spawn(process.execPath, [BIN, 'explore', '--verbose', '--json', json, '--html', page, ...flags, '--route', 'GET /status', '--', PYTHON, path.join(ROOT, 'fixtures/explore/hanging-agent.py')], { stdio: ['ignore', 'pipe', 'pipe'] }))
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
  await vi.waitFor(() => expect(stderr).toMatch(/\[explore-[0-9a-f]{8}\] waiting for the status to come back/), { timeout: 60_000, interval: 100 })
  child.kill('SIGINT')
  const [code] = (await once(child, 'exit')) as [number | null]
  return { code, stdout, stderr, json, page }
}

describe('explore: bad input', () => {
  it('exits 127 naming a command that does not exist', async () => {
    const { code, stderr } = await runCli(['explore', '--', 'toolstorm-no-such-agent', '--x'])
    expect(code).toBe(127)
    expect(stderr).toContain('Failed to run "toolstorm-no-such-agent": command not found')
  })

  it('exits 2 naming the variables to use when the agent sends nothing through the proxy', async () => {
    const { code, stderr } = await runCli(['explore', '--', process.execPath, '-e', 'console.log("done, offline")'])
    expect(code).toBe(2)
    expect(stderr).toContain('sent nothing through the proxy, so there is nothing to break')
    for (const variable of ['HTTP_PROXY', 'HTTPS_PROXY', 'TOOLSTORM_PROXY_URL', 'TOOLSTORM_RUN']) expect(stderr).toContain(variable)
    expect(stderr).toContain('done, offline')
    expect(stderr).toContain('(ERR_EXPLORE_NO_TRAFFIC)')
  })

  it('exits 2 with the tail of its output when the baseline fails, and explores nothing', async () => {
    const script = Array.from({ length: 60 }, (_, i) => `console.log('line ${i}')`).join(';') + ';process.exit(3)'
    const { code, stderr, result } = await exploreCli([], [process.execPath, '-e', script])
    expect(code).toBe(2)
    expect(stderr).toContain('with no fault injected, command exit: exited 3')
    expect(stderr).toContain('line 59')
    expect(stderr).not.toContain('line 10\n')
    expect(stderr).toContain('(ERR_EXPLORE_BASELINE)')
    expect(result).toBeNull()
  })

  it('refuses an unknown fault with a did-you-mean, on the command line and in a config file, before the command runs', async () => {
    const dir = await temporaryFolder('toolstorm-bad-fault-')
    const marker = path.join(dir, 'ran')
    const command = [process.execPath, '-e', `require('fs').writeFileSync(${JSON.stringify(marker)}, 'x')`]
    const flag = await runCli(['explore', '--faults', 'timeout,respons_lost', '--', ...command])
    expect(flag.code).toBe(2)
    expect(flag.stderr).toContain('Failed to read --faults: unknown fault "respons_lost". Did you mean "response_lost"?')
    const config = path.join(dir, 'explore.yaml')
    await writeFile(config, 'version: 1\nroutes:\n  "POST /ship":\n    faults: [{ name: slow, kind: latncy, delay: 2 }]\n')
    const file = await runCli(['explore', '--config', config, '--', ...command])
    expect(file.code).toBe(2)
    expect(file.stderr).toContain(`Failed to read ${config} $.routes["POST /ship"].faults[0] ("slow"): unknown fault kind "latncy". Did you mean "latency"?`)
    await writeFile(config, 'version: 1\nfaults: [timeout]\nroute: {}\n')
    const field = await runCli(['explore', '--config', config, '--', ...command])
    expect(field.code).toBe(2)
    expect(field.stderr).toContain(`Failed to read the explore config ${config}: $: unknown field "route" (check the spelling)`)
    expect(existsSync(marker)).toBe(false)
  })

  it.each([
    ['--rules', 'the rules file'],
    ['--config', 'the explore config'],
    ['--baseline', 'the explore baseline (--baseline)'],
    ['--allow', 'the allow list (--allow)'],
  ])('exits 2 on a missing %s file, saying which file it was', async (flag, what) => {
    const missing = path.join(await temporaryFolder('toolstorm-missing-'), 'nope.yaml')
    const { code, stderr } = await runCli(['explore', flag, missing, '--', process.execPath, '-e', '0'])
    expect(code).toBe(2)
    expect(stderr).toContain(`Failed to read ${what} ${missing}: no such file.`)
  })

  it('refuses a rules file that holds rules: explore makes its own', async () => {
    const dir = await temporaryFolder('toolstorm-bad-rules-')
    const rules = path.join(dir, 'rules.json')
    await writeFile(rules, JSON.stringify({ routes: { ship: 'POST /ship' }, rules: [{ name: 'x', route: 'ship', kind: 'timeout' }] }))
    const { code, stderr } = await runCli(['explore', '--rules', rules, '--', process.execPath, '-e', '0'])
    expect(code).toBe(2)
    expect(stderr).toContain('the rules (--rules) hold 1 rule(s); explore makes its own')
  })

  it.skipIf(!hasPythonModules('json'))('exits 2 naming what left nothing to try (a misspelled --route, a fault no call can have), never a PASS of nothing', async () => {
    const agent = [PYTHON, path.join(ROOT, 'fixtures/explore/hanging-agent.py')]
    const misspelled = await exploreCli(['--route', 'GET /stauts'], agent)
    expect(misspelled.code, misspelled.stdout).toBe(2)
    expect(misspelled.stderr).toContain('there is no fault to try')
    expect(misspelled.stderr).toContain('--route "GET /stauts": matches no route the baseline called (did you mean "GET /status"?)')
    expect(misspelled.stderr).toContain('(ERR_EXPLORE_NOTHING_TO_TRY)')
    expect(misspelled.stdout).not.toContain('PASS')
    expect(misspelled.result).toBeNull()
    // tool_error is an MCP tool's fault: no HTTP call of this agent can have it.
    const inapplicable = await exploreCli(['--faults', 'tool_error'], agent)
    expect(inapplicable.code, inapplicable.stdout).toBe(2)
    expect(inapplicable.stderr).toContain('GET /status: no fault of the table applies to this call (read, JSON)')
    expect(inapplicable.stderr).toContain('(ERR_EXPLORE_NOTHING_TO_TRY)')
  })

  it.skipIf(!hasPythonModules('json'))('kills a variation that hangs at --run-timeout, fails it as a hang, and keeps its partial cassette', async () => {
    const out = await temporaryFolder('toolstorm-hang-')
    const agent = [PYTHON, path.join(ROOT, 'fixtures/explore/hanging-agent.py')]
    const explored = await exploreCli(['--faults', 'unavailable', '--route', 'GET /status', '--run-timeout', '3', '--out', out], agent)
    expect(explored.code).toBe(1)
    const [hung] = explored.result!.variations
    expect(hung).toMatchObject({ status: 'fail', exit: { code: null, timedOut: true }, failed: [{ check: 'Run timeout', detail: 'still running after --run-timeout 3s: killed (a hang)' }] })
    expect(hung!.output).toContain('waiting for the status to come back')
    const cassette = await Cassette.load(path.join(out, hung!.id, 'cassette.jsonl'))
    expect(cassette.exchanges.map((exchange) => [exchange.route, exchange.response?.status, exchange.fault?.kind ?? null])).toEqual([
      ['GET /warmup', 200, null],
      ['GET /status', 503, 'unavailable'],
    ])
    expect(exploreResultSchema.safeParse(JSON.parse(await readFile(path.join(explored.dir, 'result.json'), 'utf8'))).success).toBe(true)
  })

  it.skipIf(!hasPythonModules('json'))('on SIGINT kills the runs under way, counts them as stopped (not failed), and still writes its outputs (exit 130)', async () => {
    // The one variation hangs once its fault fires.
    const { code, stderr, json } = await stoppedWhileHanging(['--faults', 'unavailable'])
    expect(code, stderr).toBe(130)
    const result = JSON.parse(await readFile(json, 'utf8')) as ExploreResult
    expect(result.variations.filter((variation) => variation.status === 'fail')).toEqual([])
    expect(result.skipped.find((skip) => skip.reason === 'stopped')?.variations).toBeGreaterThan(0)
  })

  it.skipIf(!hasPythonModules('json'))('never says PASS for a search stopped after a variation passed: STOPPED in the text and the HTML, exit code 1 in the JSON', async () => {
    // latency passes (the status comes, late); then unavailable hangs the agent, and explore is stopped.
    const { code, stdout, stderr, json, page } = await stoppedWhileHanging(['--faults', 'latency,unavailable'])
    expect(code, stderr).toBe(130)
    const result = JSON.parse(await readFile(json, 'utf8')) as ExploreResult
    expect(result.summary).toMatchObject({ passed: 1, failed: 0 })
    expect(result.exitCode).toBe(1)
    expect(stdout).toContain('STOPPED: 1 variation(s) not run: no verdict on the search')
    expect(stdout).not.toMatch(/^PASS/m)
    expect(await readFile(page, 'utf8')).toContain('<strong>STOPPED</strong></p>')
  })

  it('prints the JSON Schema of its --json output', async () => {
    const { code, stdout } = await runCli(['schema', 'explore'])
    expect(code).toBe(0)
    const schema = JSON.parse(stdout) as { $id: string; properties: Record<string, unknown> }
    expect(schema.$id).toBe('https://toolstorm.dev/schemas/explore.schema.json')
    expect(Object.keys(schema.properties)).toEqual(expect.arrayContaining(['variations', 'skipped', 'summary', 'exitCode']))
  })
})
