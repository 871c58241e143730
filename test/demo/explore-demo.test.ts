/**
 * `toolstorm demo --explore`: the lab's agent explored per policy finds by itself what the
 * hand-written scenarios show. And `explore({ run })`, the in-process search it is made of, gives
 * the same matrix at any number of jobs.
 */
import { describe, expect, it } from 'vitest'
import { exploreDemoPolicy } from '../../src/demo/explore-demo.js'
import type { ExploreResult } from '../../src/explore/explore-result.js'
import { runCli } from '../helpers/cli.js'
import { matrixOf } from '../explore/explore-cli.js'

describe('demo --explore', () => {
  it('finds that No retries and Unchecked retries fail and Validated retries passes every exercised variation', async () => {
    const { code, stdout, stderr } = await runCli(['demo', '--explore', '--json'])
    expect(code, stderr).toBe(0)
    const document = JSON.parse(stdout) as { kind: string; runs: Array<{ policy: string; result: ExploreResult }> }
    expect(document.kind).toBe('toolstorm.demo-explore')
    const byPolicy = Object.fromEntries(document.runs.map(({ policy, result }) => [policy, result]))
    const failing = (policy: string) => byPolicy[policy]!.variations.filter((variation) => variation.status === 'fail').map((variation) => `${variation.steps[0]!.fault} on ${variation.steps[0]!.route}`)
    // The same space for each: both routes, the default table, ordinal 1.
    for (const policy of ['optimistic', 'retry', 'resilient']) expect(byPolicy[policy]!.summary.variations).toBe(13)
    expect(failing('optimistic')).toEqual(expect.arrayContaining(['timeout on check_inventory', 'reset on create_shipment']))
    // The lost acknowledgement, found by itself: the unchecked retry ships twice.
    expect(failing('retry')).toContain('response_lost on create_shipment')
    const lost = byPolicy.retry!.variations.find((variation) => variation.steps[0]!.fault === 'response_lost')!
    expect(lost.failed[0]).toMatchObject({ check: 'No duplicate side effects' })
    expect(failing('resilient')).toEqual([])
    expect(byPolicy.resilient!.summary).toMatchObject({ failed: 0, notExercised: 0, passed: 13 })
    const table = await runCli(['demo', '--explore'])
    expect(table.stdout).toMatch(/^FAIL {2}No retries/m)
    expect(table.stdout).toMatch(/^FAIL {2}Unchecked retries .*\n {2}✗ response_lost on create_shipment #1: No duplicate side effects/m)
    expect(table.stdout).toMatch(/^PASS {2}Validated retries +13 variations: 13 pass, 0 fail, 0 not exercised$/m)
    expect(table.stdout).toContain('npx toolstorm explore -- <your agent command>')
  })

  it('explores in-process with the same matrix at --jobs 1 and 4', async () => {
    const one = await exploreDemoPolicy('retry', { seed: 42, jobs: 1 })
    const four = await exploreDemoPolicy('retry', { seed: 42, jobs: 4 })
    expect(matrixOf(four)).toEqual(matrixOf(one))
    expect(one.command).toBe('in-process')
  })
})
