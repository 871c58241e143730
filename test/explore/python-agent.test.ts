/**
 * `toolstorm explore` on a Python agent with known bugs (fixtures/explore/agent.py: its own tool
 * server and fake model, urllib through HTTP_PROXY) and on its corrected version (--fixed).
 */
import { execFile } from 'node:child_process'
import { readFile, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'
import { BIN, ROOT } from '../helpers/cli.js'
import { PYTHON, hasPythonModules } from '../helpers/python.js'
import { temporaryFolder } from '../helpers/teardown.js'
import { describeOf } from '../../src/explore/format-matrix.js'
import { byHand, exploreCli, matrixOf } from './explore-cli.js'

const AGENT = [PYTHON, path.join(ROOT, 'fixtures/explore/agent.py')]
const FIXED = [...AGENT, '--fixed']
const canRun = hasPythonModules('json')

/** The default table of docs/explore.md for this agent's calls: every HTTP call, + writes, + JSON answers, + model calls. */
const ANY = ['timeout', 'rate_limit', 'unavailable', 'reset', 'latency']
function tableFor(route: string): string[] {
  if (route === 'POST /v1/chat/completions') return [...ANY, 'schema_drift', 'overloaded']
  if (route.startsWith('POST ')) return [...ANY, 'response_lost', 'schema_drift']
  return [...ANY, 'schema_drift']
}

// Each case runs the agent some 30-70 times (explore, then by hand): minutes on a loaded 2-core machine.
describe.skipIf(!canRun)('explore: a Python agent with known bugs', { timeout: 240_000 }, () => {
  it('finds exactly the failures one rule per run finds by hand, a fallback route among them, and a fault that cannot fire as not exercised', async () => {
    const explored = await exploreCli(['--jobs', '4'], AGENT)
    expect(explored.code, explored.stderr).toBe(1)
    const result = explored.result!
    // The space: the documented table on each route the baseline called, ordinal 1 (each route was called once).
    const singles = result.variations.filter((variation) => variation.origin === 'single')
    const routes = [...new Set(singles.map((variation) => variation.steps[0]!.route))].sort()
    expect(routes).toEqual(['GET /inventory/SKU-1', 'POST /events', 'POST /shipments', 'POST /v1/chat/completions'])
    for (const route of routes) expect(singles.filter((variation) => variation.steps[0]!.route === route).map((variation) => variation.steps[0]!.fault).sort()).toEqual(tableFor(route).sort())
    // The fallback: the cache read, reached only when the inventory read fails, explored under the first fault that reached it.
    const cache = result.sites.find((site) => site.route === 'GET /inventory-cache/SKU-1')
    expect(cache?.found).toMatch(/^[0-9a-f]{8}$/)
    const fallbacks = result.variations.filter((variation) => variation.origin === 'fallback')
    expect(fallbacks.map((variation) => variation.steps.at(-1)!.fault).sort()).toEqual(tableFor('GET /inventory-cache/SKU-1').sort())
    expect(fallbacks.every((variation) => variation.steps[0]!.route === 'GET /inventory/SKU-1' && variation.id.startsWith(`${cache!.found}-`))).toBe(true)
    // By hand: each variation's rules on a run of its own, judged by exit code and duplicate effects.
    const hand = await byHand(AGENT, result.variations.map((variation) => variation.steps))
    const named = (statuses: readonly string[]) => result.variations.map((variation, index) => `${describeOf(variation)}: ${statuses[index]}`)
    expect(named(result.variations.map((variation) => variation.status))).toEqual(named(hand))
    // What the bugs are, as explore names them.
    const failing = result.variations.filter((variation) => variation.status === 'fail')
    const lost = failing.find((variation) => variation.steps[0]!.route === 'POST /shipments' && variation.steps[0]!.fault === 'response_lost')
    expect(lost?.failed.map((check) => check.check)).toEqual(['No duplicate side effects'])
    expect(lost?.failed[0]!.detail).toContain('shipment key "order-7" committed 2 times')
    expect(failing.filter((variation) => variation.steps[0]!.route === 'POST /v1/chat/completions').length).toBeGreaterThanOrEqual(5)
    expect(fallbacks.filter((variation) => variation.status === 'fail').length).toBeGreaterThanOrEqual(4)
    // schema_drift on a JSON string ("ok") has nothing to drift: it never fires, and is not a pass.
    const drift = result.variations.find((variation) => variation.steps[0]!.route === 'POST /events' && variation.steps[0]!.fault === 'schema_drift')
    expect(drift).toMatchObject({ status: 'not-exercised', fired: false, failed: [] })
    expect(result.summary.notExercised).toBe(1)
    expect(result.summary.passed + result.summary.failed + result.summary.notExercised).toBe(result.variations.length)
    expect(explored.stdout).toMatch(/schema_drift\s+not exercised/)
    // Ordinals the baseline never reached cannot fire: said, not run.
    expect(result.skipped.filter((skip) => skip.reason === 'cannot-fire').map((skip) => skip.what).sort()).toEqual(['GET /inventory/SKU-1 #2–#3', 'POST /events #2–#3', 'POST /shipments #2–#3', 'POST /v1/chat/completions #2–#3'])
  })

  it('raises no false alarm on the corrected agent: every exercised variation passes, exit 0', async () => {
    const explored = await exploreCli(['--jobs', '4'], FIXED)
    expect(explored.code, explored.stderr).toBe(0)
    const result = explored.result!
    expect(result.summary).toMatchObject({ failed: 0, notExercised: 1, newFailures: 0 })
    expect(result.variations.length).toBe(33)
    expect(explored.stdout).toContain('PASS: every exercised variation passed')
  })

  it('gives the same matrix with --jobs 4 as with --jobs 1, and the same matrix twice', async () => {
    const args = ['--faults', 'timeout,response_lost,schema_drift']
    const one = await exploreCli(args, AGENT)
    const four = await exploreCli([...args, '--jobs', '4'], AGENT)
    const again = await exploreCli([...args, '--jobs', '4'], AGENT)
    expect(one.result!.variations.some((variation) => variation.origin === 'fallback')).toBe(true)
    expect(matrixOf(four.result!)).toEqual(matrixOf(one.result!))
    expect(matrixOf(again.result!)).toEqual(matrixOf(four.result!))
    expect([one.result!.timing.jobs, four.result!.timing.jobs]).toEqual([1, 4])
  })

  it('hands back a counterexample whose cassette reproduces the failure offline, and whose --only command reproduces it live', async () => {
    const out = await temporaryFolder('toolstorm-cx-')
    const explored = await exploreCli(['--faults', 'timeout,response_lost', '--route', 'POST /*', '--out', out, '--junit', path.join(out, 'junit.xml'), '--html', path.join(out, 'explore.html')], AGENT)
    expect(explored.code).toBe(1)
    const failures = explored.result!.variations.filter((variation) => variation.status === 'fail')
    const model = failures.find((variation) => variation.steps[0]!.route === 'POST /v1/chat/completions')!
    const lost = failures.find((variation) => variation.steps[0]!.fault === 'response_lost')!
    expect(model.counterexample).toBe(path.join(out, model.id))
    const readme = await readFile(path.join(out, model.id, 'README.md'), 'utf8')
    expect(readme).toContain(`toolstorm explore --only ${model.id} --faults timeout,response_lost --route 'POST /*' -- ${AGENT.join(' ')}`)
    const rules = JSON.parse(await readFile(path.join(out, model.id, 'rules.json'), 'utf8')) as { seed: number; rules: Array<{ route: string; kind: string; calls: number[] }> }
    expect(rules).toMatchObject({ seed: 0, rules: [{ route: 'POST /v1/chat/completions', kind: 'timeout', calls: [1] }] })
    const cli = promisify(execFile)
    const exitOf = (args: string[]) => cli(process.execPath, [BIN, ...args], { cwd: ROOT }).then(() => 0, (error: { code: number }) => error.code)
    // Offline: the model call's timeout replayed from the cassette, with no network: the agent fails again (and the replay did not diverge).
    expect(await exitOf(['replay', path.join(out, model.id, 'cassette.jsonl'), '--port', '0', '--admin-port', '0', '--', ...AGENT])).toBe(1)
    // The duplicate shipment: the agent replays the same requests (strict: no divergence, exit 0 with --no-contracts),
    // and the recorded commits break the contract, in replay (exit 1, ERR_CONTRACT_FAILED) as in check.
    const replayed = await cli(process.execPath, [BIN, 'replay', path.join(out, lost.id, 'cassette.jsonl'), '--port', '0', '--admin-port', '0', '--', ...AGENT], { cwd: ROOT }).then(
      () => ({ code: 0, output: '' }),
      (error: { code: number; stdout: string; stderr: string }) => ({ code: error.code, output: error.stdout + error.stderr }),
    )
    expect(replayed.code).toBe(1)
    expect(replayed.output).toContain('ERR_CONTRACT_FAILED')
    expect(await exitOf(['replay', path.join(out, lost.id, 'cassette.jsonl'), '--no-contracts', '--port', '0', '--admin-port', '0', '--', ...AGENT])).toBe(0)
    expect(await exitOf(['check', path.join(out, lost.id, 'cassette.jsonl')])).toBe(1)
    // Live: --only reruns that one variation, and it fails again; the corrected agent passes it.
    const live = await exploreCli(['--only', lost.id, '--faults', 'timeout,response_lost', '--route', 'POST /*'], AGENT)
    expect(live.code).toBe(1)
    expect(live.result!.variations.map((variation) => [variation.id, variation.status])).toEqual([[lost.id, 'fail']])
    expect((await exploreCli(['--only', lost.id, '--faults', 'timeout,response_lost', '--route', 'POST /*'], FIXED)).code).toBe(0)
    // JUnit in a standard reader (Python's xml.etree): one testcase per variation, the failures as <failure>.
    const { stdout } = await cli('python3', ['-c', 'import sys, json, xml.etree.ElementTree as ET; root = ET.parse(sys.argv[1]).getroot(); print(json.dumps([root.get("tests"), root.get("failures"), [[c.get("classname"), c.get("name"), [x.tag for x in c if x.tag != "system-out"]] for c in root.iter("testcase")]]))', path.join(out, 'junit.xml')])
    const [tests, junitFailures, cases] = JSON.parse(stdout) as [string, string, Array<[string, string, string[]]>]
    expect(Number(tests)).toBe(explored.result!.variations.length)
    expect(Number(junitFailures)).toBe(failures.length)
    expect(cases).toContainEqual(['POST /shipments', `response_lost #1 [${lost.id}]`, ['failure']])
    expect(cases.filter(([, , children]) => children.includes('failure')).length).toBe(failures.length)
    // The page: self-contained (no script, no request), the matrix, and each failure's timeline with its effects.
    const page = await readFile(path.join(out, 'explore.html'), 'utf8')
    expect(page).not.toMatch(/<script|<link|src=|url\(|https?:\/\/(?!toolstorm)/i)
    expect(page).toContain(`<h3 id="v-${lost.id}">response_lost on POST /shipments #1`)
    expect(page).toMatch(/<td>shipment order-7 <small>\(identity 1\)<\/small><\/td>[\s\S]*<td>shipment order-7 <small>\(identity 1\)<\/small><\/td>/)
  })

  it('with --baseline passes when every failure is known, and fails on a new one; --allow accepts one', async () => {
    const dir = await temporaryFolder('toolstorm-known-')
    const args = ['--faults', 'timeout,response_lost', '--route', 'POST /*']
    const first = await exploreCli(args, AGENT)
    expect(first.code).toBe(1)
    const baseline = path.join(dir, 'baseline.json')
    await writeFile(baseline, JSON.stringify(first.result))
    const known = await exploreCli([...args, '--baseline', baseline], AGENT)
    expect(known.code, known.stdout).toBe(0)
    expect(known.result!.summary).toMatchObject({ failed: first.result!.summary.failed, newFailures: 0 })
    expect(known.stdout).toContain('PASS: every failure is known')
    // Main without the lost-response failure: on this branch it is new.
    const lost = first.result!.variations.find((variation) => variation.steps[0]!.fault === 'response_lost' && variation.status === 'fail')!
    const older = { ...first.result!, variations: first.result!.variations.filter((variation) => variation.id !== lost.id) }
    await writeFile(baseline, JSON.stringify(older))
    const fresh = await exploreCli([...args, '--baseline', baseline], AGENT)
    expect(fresh.code).toBe(1)
    expect(fresh.result!.summary.newFailures).toBe(1)
    expect(fresh.result!.variations.filter((variation) => variation.status === 'fail' && !variation.known).map((variation) => variation.id)).toEqual([lost.id])
    const allow = path.join(dir, 'allow.yaml')
    await writeFile(allow, `version: 1\nallow:\n  - id: ${lost.id}\n    reason: the shipping API dedupes by order id in production\n`)
    expect((await exploreCli([...args, '--baseline', baseline, '--allow', allow], AGENT)).code).toBe(0)
  })
})
