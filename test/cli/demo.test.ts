import { readFile, stat } from 'node:fs/promises'
import path from 'node:path'
import { describe, expect } from 'vitest'
import { runCli } from '../helpers/cli.js'
import { test as it } from '../helpers/file-fixtures.js'

/** The reference's golden results at the defaults: verdict, calls, shipments, virtual seconds. */
const GOLDEN: Record<string, Array<[string, number, number, string]>> = {
  lost_ack: [['FAIL', 2, 1, '0.20'], ['FAIL', 3, 2, '0.32'], ['PASS', 3, 1, '0.47']],
  rate_limit: [['FAIL', 1, 0, '0.00'], ['FAIL', 4, 1, '0.20'], ['PASS', 4, 1, '1.40']],
  schema_drift: [['FAIL', 2, 0, '0.12'], ['FAIL', 4, 0, '0.36'], ['PASS', 3, 1, '0.35']],
  timeout: [['FAIL', 1, 0, '0.00'], ['PASS', 3, 1, '0.20'], ['PASS', 3, 1, '0.35']],
  latency: [['FAIL', 2, 1, '1.60'], ['FAIL', 2, 1, '1.60'], ['FAIL', 2, 1, '1.60']],
  blackout: [['PASS', 1, 0, '0.00'], ['PASS', 3, 0, '0.00'], ['PASS', 3, 0, '0.45']],
  // The control plane (docs/lab.md): awaiting telemetry blows the budget; a fail-open guard ships unapproved.
  telemetry_blackout: [['FAIL', 3, 1, '2.20'], ['FAIL', 5, 1, '6.20'], ['PASS', 5, 1, '0.20']],
  approval_outage: [['FAIL', 3, 1, '0.20'], ['FAIL', 5, 1, '0.20'], ['PASS', 4, 0, '0.53']],
}

const LOST_ACK_OUTPUT = `toolstorm · Lost acknowledgement · seed 42
FAIL  No retries               2 calls · 1 shipments · 0.20s virtual
  ✓ Fault exercised: lost-receipt: Triggered 1 time(s)
  ✓ No duplicate side effects: 0 duplicate effect(s) across 1 commits
  ✓ Call budget: 2 / 8 calls
  ✗ Task completed: No confirmed shipment
  ✓ Latency budget: 0.20s / 1.50s virtual time
FAIL  Unchecked retries        3 calls · 2 shipments · 0.32s virtual
  ✓ Fault exercised: lost-receipt: Triggered 1 time(s)
  ✗ No duplicate side effects: 1 duplicate effect(s) across 2 commits
  ✓ Call budget: 3 / 8 calls
  ✓ Task completed: Shipment confirmed
  ✓ Latency budget: 0.32s / 1.50s virtual time
PASS  Validated retries        3 calls · 1 shipments · 0.47s virtual
  ✓ Fault exercised: lost-receipt: Triggered 1 time(s)
  ✓ No duplicate side effects: 0 duplicate effect(s) across 1 commits
  ✓ Call budget: 3 / 8 calls
  ✓ Task completed: Shipment confirmed
  ✓ Latency budget: 0.47s / 1.50s virtual time
`

describe('toolstorm demo', () => {
  it.each(['proxy', 'in-process'])('prints the reference table for lost_ack line for line (via %s)', async (via) => {
    const result = await runCli(['demo', '--scenario', 'lost_ack', '--policy', 'all', '--via', via])
    expect(result.code).toBe(0)
    expect(result.stdout).toBe(LOST_ACK_OUTPUT)
  })

  it('records the same calls, effects and coverage through the proxy as in-process', async () => {
    const [proxy, inProcess] = await Promise.all(['proxy', 'in-process'].map((via) => runCli(['demo', '--scenario', 'rate_limit', '--policy', 'all', '--via', via, '--json'])))
    const shape = (stdout: string) =>
      (JSON.parse(stdout) as { runs: Array<{ report: { calls: Array<Record<string, unknown>>; effects: unknown[]; coverage: unknown } }> }).runs.map((run) => ({
        calls: run.report.calls.map(({ route, ordinal, status, started, elapsed, injected, executed }) => ({ route, ordinal, status, started, elapsed, injected, executed })),
        effects: run.report.effects,
        coverage: run.report.coverage,
      }))
    expect(shape(proxy!.stdout)).toEqual(shape(inProcess!.stdout))
  })

  it.each(['proxy', 'in-process'])('reproduces the golden verdicts, calls, shipments and times of every scenario and policy (via %s)', async (via) => {
    const result = await runCli(['demo', '--scenario', 'all', '--policy', 'all', '--via', via])
    expect(result.code).toBe(0)
    const rows = result.stdout.split('\n').filter((line) => /^(PASS|FAIL) /.test(line))
    const parsed = rows.map((line) => {
      const m = /^(PASS|FAIL)\s+.+?\s(\d+) calls · (\d+) shipments · ([\d.]+)s virtual$/.exec(line)
      return [m?.[1], Number(m?.[2]), Number(m?.[3]), m?.[4]]
    })
    expect(parsed).toEqual(Object.values(GOLDEN).flat())
    expect(result.stdout).toContain('  ✓ Retry-after respected: 0 retry(s) occurred before the advertised delay')
    expect(result.stdout).toContain('  ✗ Retry-after respected: 2 retry(s) occurred before the advertised delay')
    expect(result.stdout).toContain('  ✓ Honest outcome: A stopped task never claims to have shipped')
    expect(result.stdout).toContain('  ✗ Latency budget: 2.20s / 1.50s virtual time')
    expect(result.stdout).toContain('  ✗ Approval required: shipment: 1 of 1 "shipment" effect(s) committed without a 2xx answer from "request_approval" before them (first: key "order-1729", call 3)')
    expect(result.stdout).toContain('  ✓ Approval required: shipment: 0 "shipment" effect(s), each after a 2xx answer from "request_approval"')
    expect(result.stdout).toContain('  ✓ Claims match effects: 1 claim(s), none contradicted by the effects')
  })

  it('reproduces the golden verdicts, shipments and times with the tools behind an MCP server (--via mcp)', async () => {
    const result = await runCli(['demo', '--scenario', 'all', '--policy', 'all', '--via', 'mcp', '--json'])
    expect(result.code).toBe(0)
    const runs = (JSON.parse(result.stdout) as { runs: Array<{ contract: { passed: boolean }; shipments: number; stats: { calls: number; elapsed: number }; report: { calls: Array<{ route: string }> } }> }).runs
    const golden = Object.values(GOLDEN).flat()
    expect(runs.map((run) => [run.contract.passed ? 'PASS' : 'FAIL', run.shipments, run.stats.elapsed.toFixed(2)])).toEqual(golden.map(([verdict, , shipments, seconds]) => [verdict, shipments, seconds]))
    // Every run opens an MCP session first: initialize, notifications/initialized, and the GET
    // stream a stateless server refuses; its tool calls are named after the tools.
    expect(runs.map((run) => run.stats.calls)).toEqual(golden.map(([, calls]) => calls + 3))
    expect(runs[0]!.report.calls.map((call) => call.route)).toEqual(['initialize', 'notifications/initialized', 'GET /mcp', 'tools/call check_inventory', 'tools/call create_shipment'])
    // The fail-closed agent asked the approval tool three times, did not ship, and said so (a claim).
    const failClosed = runs.at(-1) as unknown as { contract: { checks: Array<{ name: string; detail: string }> }; report: { calls: Array<{ route: string }>; claims: Array<{ tool: string; status: string; verdict: string }> } }
    expect(failClosed.report.calls.filter((call) => call.route === 'tools/call request_approval')).toHaveLength(3)
    expect(failClosed.report.claims.map(({ tool, status, verdict }) => ({ tool, status, verdict }))).toEqual([{ tool: 'create_shipment', status: 'failure', verdict: 'confirmed' }])
    expect(failClosed.contract.checks.find((check) => check.name === 'Approval required: shipment')?.detail).toBe('0 "shipment" effect(s), each after a 2xx answer from "tools/call request_approval"; no effect was reported in this run')
  })

  it('fails every run at probability 0 because nothing was injected', async () => {
    const result = await runCli(['demo', '--scenario', 'lost_ack', '--policy', 'all', '--probability', '0'])
    const rows = result.stdout.split('\n').filter((line) => /^(PASS|FAIL) /.test(line))
    expect(rows).toEqual([
      'FAIL  No retries               2 calls · 1 shipments · 0.20s virtual',
      'FAIL  Unchecked retries        2 calls · 1 shipments · 0.20s virtual',
      'FAIL  Validated retries        2 calls · 1 shipments · 0.20s virtual',
    ])
  })

  it('exits 1 with --fail-on-contract only when a contract failed', async () => {
    expect((await runCli(['demo', '--policy', 'retry', '--fail-on-contract'])).code).toBe(1)
    expect((await runCli(['demo', '--policy', 'resilient', '--fail-on-contract'])).code).toBe(0)
    expect((await runCli(['demo', '--policy', 'retry'])).code).toBe(0)
  })

  it('writes identical JSON for identical settings (deterministic under the virtual clock)', async ({ dir }) => {
    const a = path.join(dir, 'a.json')
    const b = path.join(dir, 'b.json')
    expect((await runCli(['demo', '--policy', 'all', '--via', 'in-process', '--output', a])).code).toBe(0)
    expect((await runCli(['demo', '--policy', 'all', '--via', 'in-process', '--json', '--output', b])).code).toBe(0)
    const first = JSON.parse(await readFile(a, 'utf8'))
    const second = JSON.parse(await readFile(b, 'utf8'))
    expect(first.runs.map((r: { digest: string }) => r.digest)).toEqual(second.runs.map((r: { digest: string }) => r.digest))
    expect(first).toMatchObject({ version: 1, kind: 'toolstorm.comparison', scenario: 'lost_ack', config: { seed: 42, probability: 1, maxCalls: 8 } })
    expect(((await stat(a)).mode & 0o777).toString(8)).toBe('600')
  })

  it('fails check --require-approval on a fail-open guard that shipped during the approval outage, naming the effect, its call and the answers', async ({ dir }) => {
    const out = path.join(dir, 'approval.json')
    expect((await runCli(['demo', '--scenario', 'approval_outage', '--policy', 'optimistic', '--via', 'in-process', '--output', out])).code).toBe(0)
    const result = await runCli(['check', out, '--require-approval', 'shipment=request_approval'])
    expect(result.code).toBe(1)
    expect(result.stdout).toContain('    shipment key "order-1729" committed by call 3 (create_shipment) at 0.200s: no 2xx answer from "request_approval" before it (asked: call 2 response 503 [approval-down])')
    const bad = await runCli(['check', out, '--require-approval', 'shipment'])
    expect(bad.code).toBe(2)
    expect(bad.stderr).toContain('--require-approval: expected EFFECT=ROUTE')
  })

  it.for<[string[], string]>([
    [['demo', '--max-calls', '21'], '--max-calls: expected an integer 1-20, got "21"'],
    [['demo', '--probability', '2'], '--probability: expected a number 0-1, got "2"'],
    [['demo', '--seed', 'abc'], '--seed: expected an integer within ±(2^53−1), got "abc"'],
    [['demo', '--scenario', 'nope'], 'Argument: scenario, Given: "nope", Choices: "lost_ack", "rate_limit"'],
  ])('exits 2 on bad input %j without writing output', async ([args, message], { dir }) => {
    const out = path.join(dir, `bad-${args.join('-')}.json`)
    const result = await runCli([...args, '--output', out])
    expect(result.code).toBe(2)
    expect(result.stderr).toContain(message)
    await expect(stat(out)).rejects.toThrow()
  })
})

describe('toolstorm scenarios', () => {
  it('lists the eight scenarios with their titles', async () => {
    const result = await runCli(['scenarios'])
    expect(result.stdout.split('\n')[0]).toBe('lost_ack           Lost acknowledgement')
    expect(result.stdout.trim().split('\n')).toHaveLength(8)
    expect(result.stdout).toContain('approval_outage    Approval service unavailable')
  })
})
