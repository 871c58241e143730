/**
 * The checks on effects never pass on evidence that could not arrive: a tool server that reports
 * no commits, behind a proxy whose `response_lost` made the agent retry a write. Before, `toolstorm
 * check` printed PASS ("0 duplicate effect(s) across 0 commits") while the upstream committed twice.
 */
import { writeFile } from 'node:fs/promises'
import path from 'node:path'
import { describe, expect } from 'vitest'
import { contract } from '../../src/contracts/contract.js'
import { startProxy } from '../../src/proxy/proxy-server.js'
import type { Report } from '../../src/engine/schema/report.js'
import type { StormConfigInput } from '../../src/engine/schema/config.js'
import { runCli } from '../helpers/cli.js'
import { test as it } from '../helpers/file-fixtures.js'
import { closing } from '../helpers/teardown.js'
import { startUpstream } from '../helpers/upstream.js'

const LOST_ACK: StormConfigInput = { seed: 7, routes: { ship: 'POST /ship' }, rules: [{ name: 'lost-ack', route: 'ship', kind: 'response_lost', calls: [1] }] }

/** An agent's write, retried once on a broken connection, through a proxy to a tool server that reports no effects. */
async function shipWithoutEvidence(config: StormConfigInput, method = 'POST', target = '/ship'): Promise<{ report: Report; commits: number }> {
  const upstream = closing(await startUpstream())
  const proxy = closing(await startProxy({ targets: [upstream.url], config }))
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      await (await fetch(`${proxy.url}${target}`, { method, headers: { 'content-type': 'application/json' }, body: method === 'GET' ? null : JSON.stringify({ order: 'o-1' }) })).arrayBuffer()
      break
    } catch {
      // the lost answer: retry
    }
  }
  const report = (await (await fetch(`${proxy.adminUrl}/report`, { headers: { authorization: `Bearer ${proxy.token}` } })).json()) as Report
  return { report, commits: upstream.commits.length }
}

describe('checks on effects with no effect reported', () => {
  it('fail when a write lost its answer after its upstream committed, and toolstorm check exits 1', async ({ dir }) => {
    const { report, commits } = await shipWithoutEvidence(LOST_ACK)
    expect(commits).toBe(2)
    expect(report.effects).toEqual([])
    const built = contract(report).noDuplicateEffects().atMostEffects('shipment', 1).effectsRequireApproval({ effect: 'shipment', route: 'POST /approvals' }).toJSON()
    expect(built.checks.map((check) => check.passed)).toEqual([false, false, false])
    expect(built.checks[0]!.detail).toBe(
      '0 duplicate effect(s) across 0 commits, but no effect was reported in this run, yet call 1 (ship) lost its answer after its upstream answered it (lost-ack): the tool side reports no commits, so none could be judged. Report each commit (reportEffect, docs/contracts.md#reporting-effects)',
    )
    const file = path.join(dir, 'no-evidence.json')
    await writeFile(file, JSON.stringify(report))
    const checked = await runCli(['check', file])
    expect(checked.stdout).toContain('✗ No duplicate side effects: 0 duplicate effect(s) across 0 commits, but no effect was reported in this run')
    expect(checked.code).toBe(1)
  })

  it('say so when they pass on a run with no effect, such as one whose lost answer was a read', async () => {
    const { report } = await shipWithoutEvidence({ ...LOST_ACK, routes: { ship: 'GET /items/:sku' } }, 'GET', '/items/sku-1')
    expect(report.calls.map((call) => call.fault)).toEqual(['lost-ack', null])
    expect(contract(report).noDuplicateEffects().checks).toEqual([{ name: 'No duplicate side effects', passed: true, detail: '0 duplicate effect(s) across 0 commits; no effect was reported in this run' }])
  })
})
