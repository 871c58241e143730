import { execFile } from 'node:child_process'
import { mkdtemp, open, readFile, rm, writeFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { BIN, ROOT, runCli } from '../helpers/cli.js'

const run = promisify(execFile)

let dir: string
let comparison: string
let single: string
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'toolstorm-inspect-'))
  comparison = path.join(dir, 'comparison.json')
  single = path.join(dir, 'single.json')
  expect((await runCli(['demo', '--policy', 'all', '--output', comparison])).code).toBe(0)
  expect((await runCli(['demo', '--policy', 'retry', '--output', single])).code).toBe(0)
  // Two demo runs, each a proxy and a shipping service in child processes: slow on a busy 2-core box.
}, 90_000)
afterAll(async () => {
  await rm(dir, { recursive: true, force: true })
})

describe('toolstorm inspect', () => {
  it('names the version a cassette file has (it said v1 for every cassette)', async () => {
    const result = await runCli(['inspect', path.join(ROOT, 'fixtures/cassettes/v2-before-claims.cassette.jsonl')])
    expect(result.code).toBe(0)
    expect(result.stdout).toMatch(/^Valid cassette v2: 3 exchanges/)
    const json = JSON.parse((await runCli(['inspect', path.join(ROOT, 'fixtures/cassettes/v2-before-claims.cassette.jsonl'), '--json'])).stdout) as { cassette: { version: number } }
    expect(json.cassette.version).toBe(2)
  })

  it('summarises every run of a comparison', async () => {
    const result = await runCli(['inspect', comparison])
    expect(result.code).toBe(0)
    expect(result.stdout).toMatch(/^Valid report v1 \(run [\w-]+\): 2 calls, 1 effects$/m)
    expect(result.stdout).toMatch(/^Valid report v1 \(run [\w-]+\): 3 calls, 2 effects$/m)
    expect(result.stdout).toContain('  calls per route: check_inventory 1, create_shipment 2')
    expect(result.stdout).toContain('  rule lost-receipt: eligible 1, selected 1, triggered 1')
    expect(result.stdout).toContain('  duplicate effects: 1\n    shipment key "order-1729" committed 2 times (calls 2, 3)\n')
  })

  it('prints JSON for a single run and for a bare report', async () => {
    const run = JSON.parse(await readFile(single, 'utf8'))
    const bare = path.join(dir, 'bare.json')
    await writeFile(bare, JSON.stringify(run.report))
    for (const file of [single, bare]) {
      const result = await runCli(['inspect', file, '--json'])
      expect(result.code).toBe(0)
      expect(JSON.parse(result.stdout)).toMatchObject({ version: 1, calls: 3, effects: 2, duplicateEffects: 1, routes: { check_inventory: 1, create_shipment: 2 }, faults: { response_lost: 1 } })
    }
  })

  it.each([
    ['a missing file', async () => path.join(dir, 'missing.json'), 'Failed to read', 'no such file'],
    ['invalid UTF-8', async () => { const f = path.join(dir, 'latin1.json'); await writeFile(f, Buffer.from([0x7b, 0xff, 0x7d])); return f }, 'is not valid UTF-8', ''],
    ['malformed JSON', async () => { const f = path.join(dir, 'broken.json'); await writeFile(f, '{\n  "version": 1,\n  "calls": [,]\n}'); return f }, 'as JSON: line 3, column 13 (at $.calls[0])', 'unexpected character ","'],
    ['a JSON list', async () => { const f = path.join(dir, 'list.json'); await writeFile(f, '[]'); return f }, 'expected a report, a demo run or a comparison', ''],
    ['an oversized file', async () => { const f = path.join(dir, 'huge.json'); const h = await open(f, 'w'); await h.truncate(257 * 1024 * 1024); await h.close(); return f }, 'over the limit of 268435456 bytes', ''],
  ])('exits 2 on %s, naming the file', async (_name, make, message, more) => {
    const file = await make()
    const result = await runCli(['inspect', file])
    expect(result.code).toBe(2)
    expect(result.stderr).toContain(file)
    expect(result.stderr).toContain(message)
    expect(result.stderr).toContain(more)
  })
})

describe('output cut short by its reader (#36)', () => {
  // Each prints over 64 KiB (a pipe's buffer), so it is still writing when `head` closes the pipe.
  it.each([
    ['inspect FILE --json', async () => ['inspect', await manyRuns(), '--json']],
    ['schema report', async () => ['schema', 'report']],
  ])('`toolstorm %s | head -1` prints its first line and exits 0, without an EPIPE stack trace', async (_name, args) => {
    const command = [process.execPath, BIN, ...(await args())].map((word) => `'${word}'`).join(' ')
    const result = await run('bash', ['-c', `set -o pipefail; ${command} | head -1`]).then(
      ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
      (error: { code: number; stdout: string; stderr: string }) => error,
    )
    expect(result.stderr).toBe('')
    expect(result).toMatchObject({ code: 0, stdout: '{\n' })
  })
})

/** A report set of 100 runs (the most a file may hold), each the demo's run: `inspect --json` prints about 110 KB of it. */
async function manyRuns(): Promise<string> {
  const file = path.join(dir, 'many-runs.json')
  const demo = JSON.parse(await readFile(single, 'utf8')) as { report: { run: string } }
  const runs = Array.from({ length: 100 }, (_, index) => ({ run: `run-${index}`, report: { ...demo.report, run: `run-${index}` } }))
  await writeFile(file, JSON.stringify({ version: 1, kind: 'toolstorm.report-set', toolstorm: '0.1.0', runs }))
  return file
}

describe('toolstorm check', () => {
  it('fails a run with duplicate commits and passes the resilient one', async () => {
    const result = await runCli(['check', single])
    expect(result.code).toBe(1)
    expect(result.stdout).toBe(
      'FAIL\n✓ Fault exercised: lost-receipt: Triggered 1 time(s)\n✗ No duplicate side effects: 1 duplicate effect(s) across 2 commits\n    shipment key "order-1729" committed 2 times (calls 2, 3)\n✓ Call budget: 3 / 8 calls\n✓ Task completed: Shipment confirmed\n✓ Latency budget: 0.32s / 1.50s virtual time\n',
    )
    const resilient = path.join(dir, 'resilient.json')
    await runCli(['demo', '--policy', 'resilient', '--output', resilient])
    expect((await runCli(['check', resilient])).code).toBe(0)
    expect((await runCli(['check', resilient, '--max-calls', '0'])).code).toBe(1)
  })

  it('rebuilds coverage from the calls, so a forged "triggered" exits 2', async () => {
    const run = JSON.parse(await readFile(single, 'utf8'))
    run.report.rules[0].probability = 0
    run.report.coverage['lost-receipt'] = { eligible: 1, selected: 1, triggered: 1 }
    const forged = path.join(dir, 'forged.json')
    await writeFile(forged, JSON.stringify(run))
    const result = await runCli(['check', forged, '--json'])
    expect(result.code).toBe(2)
    expect(result.stderr).toContain('$.report.calls[1].fault: a probability-zero rule cannot be selected')
  })

  it('prints every run of a comparison as JSON, each failing as the demo failed it (the no-retries run confirmed no shipment)', async () => {
    const result = await runCli(['check', comparison, '--json'])
    expect(result.code).toBe(1)
    const parsed = JSON.parse(result.stdout) as { runs: Array<{ passed: boolean }> }
    expect(parsed.runs.map((r) => r.passed)).toEqual([false, false, true])
  })
})

describe('toolstorm rules', () => {
  it('explains each rule of a YAML rules file', async () => {
    const file = path.join(dir, 'rules.yaml')
    await writeFile(
      file,
      ['seed: 42', 'routes:', '  create_shipment: POST /shipments', 'rules:', '  - name: lost-receipt', '    route: create_shipment', '    kind: response_lost', '    calls: [1]', '  - {name: busy, route: "GET /inventory/*", kind: rate_limit, calls: [1, 2], delay: 0.6}', ''].join('\n'),
    )
    const result = await runCli(['rules', file])
    expect(result.code).toBe(0)
    expect(result.stdout).toBe(
      [
        'Valid rules v1: 2 rule(s), seed 42, 1 named route(s)',
        '  route create_shipment = POST /shipments',
        '  lost-receipt: on create_shipment (calls 1), after-commit: let the upstream commit, then reset the connection instead of relaying its 2xx answer',
        // The headers exactly as sent: Retry-After has no fractions.
        '  busy: on GET /inventory/* (calls 1, 2), before-upstream: answer 429 with Retry-After: 1 and retry-after-ms: 600 (0.6s)',
        '',
      ].join('\n'),
    )
  })

  it.each([
    ['{"rules":[{"name":"r","route":"x","kind":"explode"}]}', 'rules.json', '$.rules[0].kind: expected "kind" to be one of'],
    ['{"rules":[{"name":"r","route":"x","kind":"timeout","probability":1.5}]}', 'rules.json', '$.rules[0].probability: expected a probability between 0 and 1'],
    ['rules:\n  - name: r\n    name: s\n', 'rules.yaml', 'Failed to parse'],
    ['{"rules": [}', 'rules.json', 'as JSON: line 1, column 12'],
  ])('exits 2 on a bad rules file %#, naming file and field', async (text, name, message) => {
    const file = path.join(dir, name)
    await writeFile(file, text)
    const result = await runCli(['rules', file])
    expect(result.code).toBe(2)
    expect(result.stderr).toContain(file)
    expect(result.stderr).toContain(message)
  })
})
