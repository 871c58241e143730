/**
 * `toolstorm check` on a demo run or comparison (what `toolstorm demo --output` and the lab's
 * export write) judges each run as the demo did, its scenario's own checks included. Before, it
 * ran only the common checks: every run of `demo --scenario rate_limit --policy all` passed
 * (exit 0) while the demo failed two of them (Retry-after respected, Task completed), and the
 * lab's "toolstorm check incident.json" passed the run the lab showed as FAIL.
 */
import { readFile, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { describe, expect } from 'vitest'
import { runCli } from '../helpers/cli.js'
import { test as it } from '../helpers/file-fixtures.js'

interface DemoDocument {
  runs: Array<{ policy: string; outcome: { completed: boolean }; contract: { passed: boolean; checks: Array<{ name: string; passed: boolean }> } }>
}

describe('toolstorm check on demo runs', { timeout: 60_000 }, () => {
  it.for([
    ['rate_limit', '✗ Retry-after respected: 2 retry(s) occurred before the advertised delay'],
    ['approval_outage', '✗ Approval required: shipment: 1 of 1 "shipment" effect(s) committed without a 2xx answer from "request_approval" before them'],
    ['telemetry_blackout', '✗ Latency budget: 2.20s / 1.50s virtual time'],
    ['lost_ack', '✗ Task completed: No confirmed shipment'],
  ])('fails the %s runs the demo failed, with the same checks, and exits 1', async ([scenario, line], { dir }) => {
    const file = path.join(dir, `${scenario}.json`)
    expect((await runCli(['demo', '--scenario', scenario!, '--policy', 'all', '--via', 'in-process', '--output', file])).code).toBe(0)
    const demo = JSON.parse(await readFile(file, 'utf8')) as DemoDocument
    const text = await runCli(['check', file])
    expect([text.code, text.stdout]).toEqual([1, expect.stringContaining(line!)])
    const json = await runCli(['check', file, '--json'])
    expect(json.code).toBe(1)
    const checked = (JSON.parse(json.stdout) as { runs: Array<{ passed: boolean; checks: Array<{ name: string; passed: boolean }> }> }).runs
    // Each run's checks and verdict as the demo judged it, rebuilt from the file.
    expect(checked.map((run) => run.passed)).toEqual(demo.runs.map((run) => run.contract.passed))
    expect(checked.map((run) => run.checks.map((c) => [c.name, c.passed]))).toEqual(demo.runs.map((run) => run.contract.checks.map((c) => [c.name, c.passed])))
    expect(demo.runs.some((run) => run.contract.passed)).toBe(true)
  })

  it('refuses a demo run that names its scenario without its outcome, rather than checking it without the scenario', async ({ dir }) => {
    const file = path.join(dir, 'cut.json')
    expect((await runCli(['demo', '--policy', 'optimistic', '--via', 'in-process', '--output', file])).code).toBe(0)
    const run = JSON.parse(await readFile(file, 'utf8')) as { outcome?: unknown }
    delete run.outcome
    await writeFile(file, JSON.stringify(run))
    const result = await runCli(['check', file])
    expect(result.code).toBe(2)
    expect(result.stderr).toContain(`Failed to read ${file}: $.outcome:`)
  })
})
