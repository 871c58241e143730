/**
 * `toolstorm check` applies a call budget only when someone set one (issue #36, item 4): a
 * fault-free run of 132 calls through the proxy passes with no budget given; `--max-calls` and the
 * rules' `maxCalls` (kept in the report) each set one.
 */
import { writeFile } from 'node:fs/promises'
import path from 'node:path'
import { describe, expect } from 'vitest'
import { runCli } from '../helpers/cli.js'
import { test as it } from '../helpers/file-fixtures.js'
import { startScenario } from '../helpers/scenario.js'
import { closing } from '../helpers/teardown.js'
import type { StormConfigInput } from '../../src/engine/schema/config.js'

const CALLS = 132

/** `CALLS` reads of the fake tool server through the reverse proxy, the run's report written to `file`. */
async function runThroughProxy(file: string, config: StormConfigInput): Promise<void> {
  const scenario = closing(await startScenario('reverse', config))
  for (let i = 1; i <= CALLS; i++) await (await fetch(`${scenario.baseUrl}/items/sku-${i}`)).arrayBuffer()
  const report = await scenario.report()
  await writeFile(file, JSON.stringify(report))
  expect(report.calls.length + report.budgetRejections).toBe(CALLS)
}

describe('toolstorm check: the call budget', () => {
  it('passes a fault-free run of 132 calls when no budget was set', async ({ dir }) => {
    const file = path.join(dir, 'no-budget.json')
    await runThroughProxy(file, {})
    const result = await runCli(['check', file, '--json'])
    expect(result.stderr).toBe('')
    const json = JSON.parse(result.stdout) as { passed: boolean; checks: Array<{ name: string; passed: boolean; detail: string }> }
    expect(json.checks.map((check) => check.name)).not.toContain('Call budget')
    expect(json.passed).toBe(true)
    expect(result.code).toBe(0)
  })

  it('applies --max-calls when given', async ({ dir }) => {
    const file = path.join(dir, 'flag.json')
    await runThroughProxy(file, {})
    const over = await runCli(['check', file, '--max-calls', String(CALLS - 1)])
    expect(over.stdout).toContain(`✗ Call budget: ${CALLS} / ${CALLS - 1} calls`)
    expect(over.code).toBe(1)
    const within = await runCli(['check', file, '--max-calls', String(CALLS)])
    expect(within.stdout).toContain(`✓ Call budget: ${CALLS} / ${CALLS} calls`)
    expect(within.code).toBe(0)
  })

  it("applies the rules' maxCalls, kept in the report, when no --max-calls is given", async ({ dir }) => {
    const within = path.join(dir, 'rules-within.json')
    await runThroughProxy(within, { maxCalls: 200 })
    const passing = await runCli(['check', within])
    expect(passing.stdout).toContain(`✓ Call budget: ${CALLS} / 200 calls`)
    expect(passing.code).toBe(0)

    // The proxy refused the calls past the budget; the attempts still count against it.
    const over = path.join(dir, 'rules-over.json')
    await runThroughProxy(over, { maxCalls: 100 })
    const failing = await runCli(['check', over])
    expect(failing.stdout).toContain(`✗ Call budget: ${CALLS} / 100 calls`)
    expect(failing.code).toBe(1)
    // The flag wins over the rules' budget.
    const flag = await runCli(['check', over, '--max-calls', '500'])
    expect(flag.stdout).toContain(`✓ Call budget: ${CALLS} / 500 calls`)
  })
})
