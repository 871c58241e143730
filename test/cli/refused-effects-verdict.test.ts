/**
 * A run whose only failure is an effect report the proxy refused (its effects may be incomplete)
 * is a failed run in every output that gives a verdict, not only in `toolstorm check`. Before,
 * `check` exited 1 on it while `inspect --runs` (text and --json), the dashboard's `GET /runs/lines`
 * and the flight recorder called it ok, and `inspect` did not mention the refused reports.
 */
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { readFile, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { describe, expect } from 'vitest'
import { startProxy } from '../../src/proxy/proxy-server.js'
import { runCli } from '../helpers/cli.js'
import { test as it } from '../helpers/file-fixtures.js'
import { closing, closingServer } from '../helpers/teardown.js'

const REFUSED = 'Failed to record an effect: name and key must be strings of 1–200 characters.'

/** A tool server that answers every request with the headers it got (the proxy's x-toolstorm-call among them). */
async function startEcho(): Promise<string> {
  const server = closingServer(
    http.createServer((req, res) => {
      req.resume()
      req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ headers: req.headers })))
    }),
  )
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

describe('a run whose effect report was refused', { timeout: 60_000 }, () => {
  it('fails in check, inspect, inspect --runs (text and JSON), GET /runs/lines and the flight recorder', async ({ dir }) => {
    const incidents = path.join(dir, 'incidents')
    const proxy = closing(await startProxy({ targets: [await startEcho()], incidents: { dir: incidents, runIdleMs: 60_000 } }))
    const auth = { authorization: `Bearer ${proxy.token}` }
    const callIn = async (run: string) => ((await (await fetch(`${proxy.url}/write`, { method: 'POST', body: '{}', headers: { 'x-toolstorm-run': run } })).json()) as { headers: Record<string, string> }).headers['x-toolstorm-call']!
    const effect = (call: string, name: string) => fetch(`${proxy.adminUrl}/effects`, { method: 'POST', body: JSON.stringify({ name, key: 'o-1', call }) })
    expect((await effect(await callIn('good'), 'shipment')).status).toBe(201)
    // The tool server's commit in run "bad" is reported under a name the proxy refuses: that commit is missing.
    expect((await effect(await callIn('bad'), 'x'.repeat(201))).status).toBe(400)

    const lines = (await (await fetch(`${proxy.adminUrl}/runs/lines`, { headers: auth })).json()) as { runs: Array<{ run: string; verdict: string; why: string[] }>; failed: number }
    expect(lines.runs.map(({ run, verdict, why }) => ({ run, verdict, why }))).toEqual([
      { run: 'good', verdict: 'ok', why: [] },
      { run: 'bad', verdict: 'failed', why: ['effects_refused'] },
    ])
    expect(lines.failed).toBe(1)

    const report = async (run: string) => (await (await fetch(`${proxy.adminUrl}/report?run=${run}`, { headers: auth })).json()) as object
    const set = path.join(dir, 'runs.json')
    await writeFile(set, JSON.stringify({ runs: [{ report: await report('good') }, { report: await report('bad') }] }))

    const checked = await runCli(['check', set])
    expect([checked.code, checked.stdout]).toEqual([1, expect.stringContaining('FAIL run bad\n✗ No duplicate side effects: 0 duplicate effect(s) across 0 commits, but 1 effect report(s) were refused')])
    expect(checked.stdout).toContain('2 runs: 1 failed, 1 passed')
    const checkedJson = await runCli(['check', set, '--json'])
    expect(checkedJson.code).toBe(1)
    expect((JSON.parse(checkedJson.stdout) as { runs: Array<{ run: string; passed: boolean }> }).runs.map(({ run, passed }) => [run, passed])).toEqual([['good', true], ['bad', false]])

    const runs = await runCli(['inspect', set, '--runs'])
    expect(runs.stdout).toMatch(/^ok {3}good {2}1 calls {2}200×1 {2}effects 1$/m)
    expect(runs.stdout).toContain(`FAIL bad  1 calls  200×1  effects 0  effects_refused: 1 effect report(s) refused, its effects may be incomplete (first: ${REFUSED})`)
    expect(runs.stdout).toContain('2 runs: 1 failed, 1 ok')
    const failedOnly = JSON.parse((await runCli(['inspect', set, '--runs', '--failed', '--json'])).stdout) as { runs: Array<{ run: string; detail: string[] }>; total: number; failed: number }
    expect(failedOnly).toMatchObject({ runs: [{ run: 'bad', detail: [`1 effect report(s) refused, its effects may be incomplete (first: ${REFUSED})`] }], total: 2, failed: 1 })

    const summary = await runCli(['inspect', set])
    expect(summary.stdout).toContain(`Valid report v1 (run bad): 1 calls, 0 effects\n  effect reports refused: 1, so its effects may be incomplete (first: ${REFUSED})`)
    expect((JSON.parse((await runCli(['inspect', set, '--json'])).stdout) as { runs: Array<{ refusedEffects?: unknown }> }).runs.map((run) => run.refusedEffects)).toEqual([undefined, { count: 1, first: REFUSED }])

    // The flight recorder keeps the run when it ends, and not the healthy one.
    for (const run of ['good', 'bad']) await fetch(`${proxy.adminUrl}/runs/end?run=${run}`, { method: 'POST', headers: auth })
    const index = (await readFile(path.join(incidents, 'index.jsonl'), 'utf8').catch(() => '')).split('\n').filter(Boolean).map((line) => JSON.parse(line) as { run: string; why: string[] })
    expect(index.map(({ run, why }) => ({ run, why }))).toEqual([{ run: 'bad', why: ['effects_refused'] }])
  })
})
