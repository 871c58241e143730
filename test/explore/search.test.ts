/**
 * The search's shape on the Python agent of fixtures/explore: `--max-runs` runs the most
 * informative first and says what it left, `--time-budget` stops starting runs, `--depth 2`
 * pairs the single faults that passed with the faults at the call sites their runs reached
 * (equivalent pairs run once, pairs with a failing single are implied), and the checks explore
 * is given: claims against effects, a call budget the baseline itself breaks.
 */
import { writeFile } from 'node:fs/promises'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { describeOf } from '../../src/explore/format-matrix.js'
import { ROOT } from '../helpers/cli.js'
import { PYTHON, hasPythonModules } from '../helpers/python.js'
import { temporaryFolder } from '../helpers/teardown.js'
import { exploreCli } from './explore-cli.js'

const AGENT = [PYTHON, path.join(ROOT, 'fixtures/explore/agent.py')]
const CLAIMS = [PYTHON, path.join(ROOT, 'fixtures/explore/claims-agent.py')]

describe.skipIf(!hasPythonModules('json'))('explore: the search', { timeout: 240_000 }, () => {
  it('--max-runs runs writes before reads and says which variations it left, the same ones every time', async () => {
    const explored = await exploreCli(['--faults', 'timeout', '--max-runs', '2'], AGENT)
    const result = explored.result!
    expect(result.variations.map(describeOf)).toEqual(['timeout on POST /shipments #1', 'timeout on POST /events #1'])
    const left = result.skipped.filter((skip) => skip.reason === 'max-runs')
    expect(left).toHaveLength(1)
    expect(left[0]!.names).toEqual(['timeout on POST /v1/chat/completions #1', 'timeout on GET /inventory/SKU-1 #1'])
    expect(left[0]!.detail).toBe('not run: --max-runs 2 reached (the most informative ran first)')
    expect(explored.stdout).toMatch(/--max-runs +2 variation\(s\): not run: --max-runs 2 reached/)
    const again = await exploreCli(['--faults', 'timeout', '--max-runs', '2', '--jobs', '2'], AGENT)
    expect(again.result!.variations.map((variation) => variation.id)).toEqual(result.variations.map((variation) => variation.id))
  })

  it('fails an explore in which no fault fired: not exercised proves nothing, so it is no PASS (exit 1)', async () => {
    // schema_drift on POST /events, answered with the JSON string "ok": nothing to drift, the one variation never fires.
    const explored = await exploreCli(['--faults', 'schema_drift', '--route', 'POST /events'], AGENT)
    expect(explored.result!.summary).toMatchObject({ variations: 1, passed: 0, failed: 0, notExercised: 1 })
    expect(explored.code, explored.stdout).toBe(1)
    expect(explored.result!.exitCode).toBe(1)
    expect(explored.stdout).toContain('FAIL: no fault fired in 1 variation(s): nothing was tested')
    expect(explored.stdout).not.toContain('PASS: every exercised variation passed')
  })

  it('says in not run: a --route or a config route that matches no route of the baseline, with the route it was likely meant to be', async () => {
    const dir = await temporaryFolder('toolstorm-config-route-')
    const config = path.join(dir, 'explore.yaml')
    await writeFile(config, 'version: 1\nroutes:\n  "POST /shipment": { faults: [response_lost] }\n')
    const explored = await exploreCli(['--faults', 'timeout', '--config', config, '--route', 'POST /shipments', '--route', 'POST /event'], AGENT)
    const said = explored.result!.skipped.filter((skip) => skip.variations === 0).map((skip) => [skip.reason, skip.what, skip.detail])
    expect(said).toEqual([
      ['route-filter', '--route "POST /event"', 'matches no route the baseline called (did you mean "POST /events"?)'],
      ['config', 'routes["POST /shipment"]', 'matches no route the baseline called (did you mean "POST /shipments"?)'],
    ])
    expect(explored.stdout).toMatch(/--route +--route "POST \/event": matches no route the baseline called \(did you mean "POST \/events"\?\)/)
    expect(explored.result!.variations.map(describeOf)).toEqual(['timeout on POST /shipments #1'])
  })

  it('--time-budget starts no run once it is spent, and says what it left', async () => {
    const { result } = await exploreCli(['--faults', 'timeout,latency', '--time-budget', '1'], AGENT)
    const left = result!.skipped.filter((skip) => skip.reason === 'time-budget')
    expect(left).toHaveLength(1)
    expect(left[0]!.variations).toBeGreaterThan(0)
    expect(result!.variations.length + left[0]!.variations).toBe(8)
  })

  it('--depth 2 pairs each single fault that passed with the faults its run reached, and finds the duplicate only a retry under a fault shows', async () => {
    const explored = await exploreCli(['--faults', 'timeout,response_lost', '--route', 'POST /*', '--depth', '2', '--jobs', '4'], AGENT)
    const result = explored.result!
    const pairs = result.variations.filter((variation) => variation.origin === 'pair')
    expect(pairs.length).toBeGreaterThan(0)
    expect(pairs.every((variation) => variation.steps.length === 2)).toBe(true)
    // The retry after a timeout is a call site of its own (#2), reached only under that timeout: losing its answer ships twice.
    const retry = pairs.find((variation) => describeOf(variation) === 'response_lost on POST /shipments #2 after timeout on POST /shipments #1')
    expect(retry).toMatchObject({ status: 'fail', failed: [{ check: 'No duplicate side effects' }] })
    // A pair found from both of its faults runs once; pairs with a fault that fails alone are not run.
    expect(result.skipped.some((skip) => skip.reason === 'equivalent' && /the same faults as [0-9a-f-]+$/.test(skip.detail))).toBe(true)
    const implied = result.skipped.filter((skip) => skip.reason === 'implied')
    expect(implied.map((skip) => skip.detail)).toEqual(expect.arrayContaining([expect.stringMatching(/^\d+ pair\(s\) with response_lost on POST \/shipments #1: it fails alone$/)]))
    const keys = new Set(pairs.map((variation) => variation.steps.map((step) => `${step.fault}@${step.route}#${step.ordinal}`).sort().join('+')))
    expect(keys.size).toBe(pairs.length)
  })

  it('fails a run whose claims the effects contradict (a silent commit), unless --no-claims', async () => {
    const explored = await exploreCli(['--faults', 'timeout,response_lost'], CLAIMS)
    expect(explored.code).toBe(1)
    const verdicts = Object.fromEntries(explored.result!.variations.map((variation) => [variation.steps[0]!.fault, [variation.status, variation.failed.map((check) => check.detail)]]))
    expect(verdicts).toEqual({
      timeout: ['pass', []],
      response_lost: ['fail', ['1 of 1 claim(s) contradicted by the effects (#1 POST /ship failure: silent_commit)']],
    })
    expect((await exploreCli(['--faults', 'timeout,response_lost', '--no-claims'], CLAIMS)).code).toBe(0)
  })

  it('stops at the baseline when it breaks a budget it is given', async () => {
    const { code, stderr } = await exploreCli(['--max-calls', '3'], [...AGENT, '--fixed'])
    expect(code).toBe(2)
    expect(stderr).toContain('with no fault injected, the run broke its contract: Call budget: 4 / 3 calls')
  })
})
