/**
 * `toolstorm extract` (#40): one run out of a stopped recording, as a valid cassette of its own.
 */
import { readdir, readFile, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { describe, expect } from 'vitest'
import { Cassette } from '../../src/cassette/format/cassette.js'
import { bodiesFolderFor } from '../../src/cassette/format/body-files.js'
import { indexFileFor } from '../../src/cassette/record/cassette-parts.js'
import { startProxy } from '../../src/proxy/proxy-server.js'
import { runCli } from '../helpers/cli.js'
import { test as it } from '../helpers/file-fixtures.js'

const call = (base: string, run: string, p: string, body?: string) =>
  fetch(base + p, { method: body === undefined ? 'GET' : 'POST', headers: { 'x-toolstorm-run': run, 'content-type': 'application/json' }, ...(body === undefined ? {} : { body }) }).then((response) => response.text())

describe('toolstorm extract', { timeout: 120_000 }, () => {
  it('cuts one run (or its routes) out of a stopped cassette, renumbered, body files included, and the cut replays', async ({ dir, upstream }) => {
    const file = path.join(dir, 'day.jsonl')
    const proxy = await startProxy({ targets: [upstream.url], record: file })
    const large = JSON.stringify({ order: 'o-1', note: 'x'.repeat(100_000) })
    // Three runs interleaved, as a proxy in staging sees them.
    await call(proxy.url, 'a', '/items/1')
    await call(proxy.url, 'b', '/items/2')
    await call(proxy.url, 'a', '/ship', large)
    await call(proxy.url, 'c', '/items/3')
    await call(proxy.url, 'a', '/items/4')
    await proxy.close()

    const out = path.join(dir, 'a.jsonl')
    const result = await runCli(['extract', file, '--run', 'a', '--out', out])
    expect(result.code, result.stderr).toBe(0)
    expect(result.stderr).toContain(`extracted 3 exchanges of run a into ${out}`)
    const cut = await Cassette.load(out)
    expect(cut.exchanges.map((e) => [e.seq, e.run, e.call, e.request.url])).toEqual([
      [1, 'a', 1, '/items/1'],
      [2, 'a', 2, '/ship'],
      [3, 'a', 3, '/items/4'],
    ])
    expect(cut.exchanges[1]?.request.body?.data).toBe(large)
    expect(await readdir(bodiesFolderFor(out))).toHaveLength(1)

    // Only the shipments: call ids and ordinals start at 1.
    const ships = path.join(dir, 'a-ships.jsonl')
    expect((await runCli(['extract', file, '--run', 'a', '--route', 'POST /ship', '--out', ships])).code).toBe(0)
    expect((await Cassette.load(ships)).exchanges.map((e) => [e.seq, e.call, e.ordinal, e.key, e.route])).toEqual([[1, 1, 1, '#1', 'POST /ship']])

    // The cut is a fixture: the run's requests replay from it, strictly.
    const script = path.join(dir, 'agent.mjs')
    await writeFile(script, `const base = process.env.TOOLSTORM_PROXY_URL\nfor (const [p, body] of [['/items/1'], ['/ship', ${JSON.stringify(large)}], ['/items/4']]) console.log((await fetch(base + p, { method: body ? 'POST' : 'GET', headers: { 'x-toolstorm-run': 'a', 'content-type': 'application/json' }, body })).status)\n`)
    const replayed = await runCli(['replay', out, '--port', '0', '--admin-port', '0', '--', process.execPath, script])
    expect([replayed.code, replayed.stdout]).toEqual([0, '200\n201\n200\n'])

    // A run that is not there is named, with the runs that are; an existing --out is not replaced.
    const missing = await runCli(['extract', file, '--run', 'zz', '--out', path.join(dir, 'zz.jsonl')])
    expect([missing.code, missing.stderr]).toEqual([2, expect.stringContaining(`Failed to extract from ${file}: no exchange of run "zz" (runs there: a, b, c).`)])
    const exists = await runCli(['extract', file, '--run', 'b', '--out', out])
    expect([exists.code, exists.stderr]).toEqual([2, expect.stringContaining(`Failed to extract into ${out}: it exists.`)])
  })

  it('extracts a run from a rotated recording\'s index, across the parts it went through, its call ids contiguous', async ({ dir, upstream }) => {
    const file = path.join(dir, 'rotated.jsonl')
    const proxy = await startProxy({ targets: [upstream.url], record: { file, rotate: { maxBytes: 1024, runIdleMs: 1 } } })
    for (let i = 0; i < 4; i++) {
      await call(proxy.url, 'long', `/items/l${i}`)
      await call(proxy.url, `short-${i}`, `/items/s${i}`)
      await new Promise((resolve) => setTimeout(resolve, 5))
    }
    await proxy.close()
    const index = (await readFile(indexFileFor(file), 'utf8')).split('\n').filter(Boolean).map((line) => JSON.parse(line) as { runs?: Array<{ run: string }> })
    expect(index.filter((line) => line.runs?.some((run) => run.run === 'long')).length).toBeGreaterThan(1)
    const out = path.join(dir, 'long.jsonl')
    const result = await runCli(['extract', indexFileFor(file), '--run', 'long', '--out', out])
    expect(result.code, result.stderr).toBe(0)
    expect((await Cassette.load(out)).exchanges.map((e) => [e.call, e.request.url])).toEqual([
      [1, '/items/l0'],
      [2, '/items/l1'],
      [3, '/items/l2'],
      [4, '/items/l3'],
    ])
  })
})
