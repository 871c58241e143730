/**
 * Runs are never silently forgotten, and many of them can be read (#40): an evicted run's report is
 * an error that says so, a report written after evictions says how many runs it lacks, check and
 * inspect read report sets of any size and name the run of each finding, inspect --runs finds the
 * runs that went wrong.
 */
import { readFile } from 'node:fs/promises'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import path from 'node:path'
import { describe, expect } from 'vitest'
import { startProxy } from '../../src/proxy/proxy-server.js'
import { runCli } from '../helpers/cli.js'
import { startCliProxy } from '../helpers/cli-proxy.js'
import { test as it } from '../helpers/file-fixtures.js'
import { closing, closingServer } from '../helpers/teardown.js'

const get = (base: string, p: string, run: string) => fetch(base + p, { headers: { 'x-toolstorm-run': run } }).then((response) => response.text())

/** An upstream answering 500 to `/broken`, 200 to anything else. */
async function startFlaky(): Promise<string> {
  const server = closingServer(http.createServer((req, res) => res.writeHead(req.url === '/broken' ? 500 : 200, { 'content-type': 'application/json' }).end('{}')))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

describe('runs at scale', { timeout: 120_000 }, () => {
  it('answers an evicted run\'s report with ERR_RUN_EVICTED (410), not an empty report; a run never seen still has an empty one', async ({ upstream }) => {
    const proxy = closing(await startProxy({ targets: [upstream.url] }))
    proxy.storm.ledger.maxRuns = 3
    for (let i = 0; i < 5; i++) await get(proxy.url, '/items/1', `run-${i}`)
    const auth = { authorization: `Bearer ${proxy.token}` }
    const evicted = await fetch(`${proxy.adminUrl}/report?run=run-0`, { headers: auth })
    expect(evicted.status).toBe(410)
    const body = (await evicted.json()) as { error: { code: string; message: string } }
    expect(body.error).toMatchObject({ code: 'ERR_RUN_EVICTED', message: 'Failed to report run "run-0": it was evicted (this proxy keeps the last 3 runs, --max-runs; 2 evicted so far). Its report is gone; raise --max-runs, or keep the runs that went wrong with --incidents.' })
    expect(((await (await fetch(`${proxy.adminUrl}/report?run=run-4`, { headers: auth })).json()) as { calls: unknown[] }).calls).toHaveLength(1)
    expect(((await (await fetch(`${proxy.adminUrl}/report?run=never-seen`, { headers: auth })).json()) as { calls: unknown[] }).calls).toEqual([])
    // The same id again is a new run: kept, reported.
    await get(proxy.url, '/items/1', 'run-0')
    expect((await fetch(`${proxy.adminUrl}/report?run=run-0`, { headers: auth })).status).toBe(200)
  })

  it('--report says how many runs --max-runs evicted, and check and inspect read it and say so', async ({ dir, upstream }) => {
    const report = path.join(dir, 'evicted.report.json')
    const proxy = await startCliProxy(['--target', upstream.url, '--max-runs', '3', '--report', report])
    for (let i = 0; i < 5; i++) await get(proxy.url, '/items/1', `run-${i}`)
    const stderr = await proxy.stop()
    expect(stderr).toContain('warning: 2 runs are not in the report (evicted: this proxy kept the last 3 runs (--max-runs))')
    const document = JSON.parse(await readFile(report, 'utf8')) as { runs: Array<{ run: string }>; omitted: unknown }
    expect(document.runs.map((run) => run.run)).toEqual(['run-2', 'run-3', 'run-4'])
    expect(document.omitted).toEqual({ runs: 2, reason: 'evicted: this proxy kept the last 3 runs (--max-runs)' })
    const checked = await runCli(['check', report])
    expect(checked.stderr).toContain(`warning: 2 runs are not in ${report} (evicted: this proxy kept the last 3 runs (--max-runs)): the contract runs on the others`)
    expect(checked.stdout).toContain('3 runs: 0 failed, 3 passed')
  })

  it('check --json and inspect --json say which runs a one-run report set lacks, as their text does', async ({ dir, upstream }) => {
    const report = path.join(dir, 'one-left.report.json')
    const proxy = await startCliProxy(['--target', upstream.url, '--max-runs', '1', '--report', report])
    for (let i = 0; i < 3; i++) await get(proxy.url, '/items/1', `run-${i}`)
    await proxy.stop()
    const omitted = { runs: 2, reason: 'evicted: this proxy kept the last 1 runs (--max-runs)' }
    const checked = await runCli(['check', report, '--json'])
    expect(JSON.parse(checked.stdout)).toMatchObject({ run: 'run-2', passed: true, omitted })
    expect(checked.stderr).toContain('warning: 2 runs are not in')
    expect(JSON.parse((await runCli(['inspect', report, '--json'])).stdout)).toMatchObject({ run: 'run-2', calls: 1, omitted })
  })

  it('check and inspect read a report set of 150 runs; check names the run of each finding; inspect --runs --failed lists the runs that went wrong', async ({ dir }) => {
    const flaky = await startFlaky()
    const report = path.join(dir, 'many.report.json')
    const cassette = path.join(dir, 'many.jsonl')
    const proxy = await startCliProxy(['--target', flaky, '--report', report, '--record', cassette])
    // run-42 meets an upstream 500, and retries: two calls where every other run makes one.
    for (let i = 0; i < 150; i += 15) await Promise.all(Array.from({ length: 15 }, async (_, j) => (i + j === 42 ? get(proxy.url, '/broken', 'run-42').then(() => get(proxy.url, '/ok', 'run-42')) : get(proxy.url, '/ok', `run-${i + j}`))))
    await proxy.stop()
    // Before #40: "$.runs: expected a list of 1–100 run records" (exit 2).
    const checked = await runCli(['check', report, '--max-calls', '1'])
    expect(checked.code, checked.stderr).toBe(1)
    // The finding names its run; a passing run is one line.
    expect(checked.stdout).toContain('FAIL run run-42\n✗ Call budget: 2 / 1 calls')
    expect(checked.stdout).toContain('PASS run run-41\n')
    expect(checked.stdout).toContain('150 runs: 1 failed, 149 passed')
    const inspected = await runCli(['inspect', report, '--runs', '--failed'])
    expect(inspected.code, inspected.stderr).toBe(0)
    expect(inspected.stdout.trim().split('\n')).toEqual(['FAIL run-42  2 calls  200×1 500×1  effects 0  upstream_error: call 1 (GET /broken): the upstream answered 500', '150 runs: 1 failed, 149 ok'])
    const json = JSON.parse((await runCli(['inspect', cassette, '--runs', '--json'])).stdout) as { runs: Array<{ run: string; verdict: string; why: string[] }>; total: number; failed: number }
    expect([json.total, json.failed]).toEqual([150, 1])
    expect(json.runs.find((run) => run.run === 'run-42')).toMatchObject({ verdict: 'failed', why: ['upstream_error'] })
  })
})
