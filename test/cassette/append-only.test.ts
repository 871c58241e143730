/**
 * Cassette version 4 is append-only (docs/cassettes.md#the-file-format): each recording appends to
 * the cassette it is given as its next segment, never replacing what another recording wrote.
 */
import { appendFile, readFile, stat, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { describe, expect } from 'vitest'
import { Cassette, cassetteHeader } from '../../src/cassette/format/cassette.js'
import { createCassetteRecorder } from '../../src/cassette/record/cassette-recorder.js'
import { legacyJournalFor } from '../../src/cassette/record/open-cassette-file.js'
import { createStorm } from '../../src/create-storm.js'
import { startProxy } from '../../src/proxy/proxy-server.js'
import { exchangeAt } from '../helpers/cassette-fixtures.js'
import { runCli } from '../helpers/cli.js'
import { test as it } from '../helpers/file-fixtures.js'

/** Record `paths` through a proxy on `file` (in this process); returns what the recorder said it did. */
async function record(file: string, target: string, paths: string[], options: { overwrite?: boolean; warn?: (line: string) => void } = {}) {
  const proxy = await startProxy({ targets: [target], record: { file, ...(options.overwrite ? { overwrite: true } : {}) }, ...(options.warn ? { warn: options.warn } : {}) })
  try {
    for (const p of paths) await (await fetch(proxy.url + p)).text()
  } finally {
    await proxy.close()
  }
  return proxy.recorder?.started ?? null
}

/** A version 3 cassette of `n` exchanges, as toolstorm before version 4 wrote it. */
function v3(n: number): string {
  const header = { ...cassetteHeader({ recorded: '2026-01-01T00:00:00.000Z', source: 'proxy' }, n), version: 3 }
  return [JSON.stringify(header), ...Array.from({ length: n }, (_, i) => JSON.stringify(exchangeAt(i + 1)))].join('\n') + '\n'
}

describe('append-only cassettes (version 4)', { timeout: 60_000 }, () => {
  it('startProxy({ record }) on an existing cassette appends a segment and says so; each exchange line is written once', async ({ dir, upstream }) => {
    const file = path.join(dir, 'twice.cassette.jsonl')
    const lines: string[] = []
    expect((await record(file, upstream.url, ['/items/1', '/items/2'], { warn: (line) => lines.push(line) }))?.action).toBe('created')
    const size = (await stat(file)).size
    const before = await readFile(file, 'utf8')
    const started = await record(file, upstream.url, ['/items/3'], { warn: (line) => lines.push(line) })
    expect(started).toMatchObject({ action: 'appended', previous: 2, segment: 2 })
    expect(lines).toEqual([`recording into a new cassette ${file}`, `appending to the cassette ${file} (2 exchanges already recorded) as segment 2; --overwrite replaces it instead`])
    // The first recording's bytes are untouched: the second one only added lines after them.
    expect((await readFile(file, 'utf8')).slice(0, size)).toBe(before)
    const cassette = await Cassette.load(file)
    expect(cassette.header.version).toBe(4)
    // The header was written once the proxy had said where the recorder sits: no settings line corrects it.
    expect([cassette.header.source, cassette.header.targets]).toEqual(['proxy', [upstream.url]])
    expect(before).not.toContain('{"line":"settings"')
    expect(cassette.exchanges.map((e) => [e.seq, e.call, e.request.url])).toEqual([
      [1, 1, '/items/1'],
      [2, 2, '/items/2'],
      [3, 1, '/items/3'],
    ])
    expect(cassette.segments.map(({ first, exchanges, ended }) => ({ first, exchanges, ended }))).toEqual([
      { first: 1, exchanges: 2, ended: true },
      { first: 3, exchanges: 1, ended: true },
    ])
    // A replay serves both segments (the second numbered its run's calls from 1 again: a new report, default~2).
    expect(cassette.toReports().map((report) => [report.run, report.calls.length])).toEqual([
      ['default', 2],
      ['default~2', 1],
    ])
  })

  it('overwrite: true replaces the cassette, and a recording with no exchange leaves the file as it was', async ({ dir, upstream }) => {
    const file = path.join(dir, 'replaced.cassette.jsonl')
    await record(file, upstream.url, ['/items/1', '/items/2'])
    const before = await readFile(file, 'utf8')
    expect(await record(file, upstream.url, [])).toMatchObject({ action: 'appended' })
    expect(await readFile(file, 'utf8')).toBe(before)
    expect(await record(file, upstream.url, ['/items/9'], { overwrite: true })).toMatchObject({ action: 'replaced', previous: 2 })
    expect((await Cassette.load(file)).exchanges.map((e) => e.request.url)).toEqual(['/items/9'])
  })

  it('refuses to append to a cassette recorded with other matching options (ERR_CASSETTE_EXISTS), leaving it untouched', async ({ dir, upstream }) => {
    const file = path.join(dir, 'normalised.cassette.jsonl')
    const proxy = await startProxy({ targets: [upstream.url], record: { file, match: { normalize: ['ids'] } } })
    await (await fetch(proxy.url + '/items/1')).text()
    await proxy.close()
    const before = await readFile(file, 'utf8')
    const recorder = createCassetteRecorder(createStorm(), { file })
    await expect(recorder.ready()).rejects.toMatchObject({ code: 'ERR_CASSETTE_EXISTS', message: expect.stringContaining(`Failed to record into ${file}: it is a cassette recorded with other matching options`) })
    await recorder.discard()
    expect(await readFile(file, 'utf8')).toBe(before)
  })

  it('loads a cassette whose last line a kill -9 cut short (skipping it, and saying how many bytes), and the next recorder cuts it off before appending', async ({ dir, upstream }) => {
    const file = path.join(dir, 'torn.cassette.jsonl')
    await record(file, upstream.url, ['/items/1', '/items/2'])
    const whole = await readFile(file, 'utf8')
    // What a write interrupted mid-line leaves (the end line is gone too: the recorder never closed).
    const kept = whole.slice(0, whole.lastIndexOf('{"line":"end"'))
    await writeFile(file, kept + '{"seq":3,"run":"default","ca')
    const torn = await Cassette.load(file)
    expect(torn.exchanges).toHaveLength(2)
    expect(torn.interruptedBytes).toBe('{"seq":3,"run":"default","ca'.length)
    expect(torn.segments[0]?.ended).toBe(false)
    const started = await record(file, upstream.url, ['/items/3'])
    expect(started?.message).toContain('an interrupted last line (28 bytes, no newline: a write cut short) was dropped')
    const cassette = await Cassette.load(file)
    expect(cassette.interruptedBytes).toBe(0)
    expect(cassette.exchanges.map((e) => e.request.url)).toEqual(['/items/1', '/items/2', '/items/3'])
  })

  it('a version 3 cassette with a journal a killed recorder left becomes version 4 with every journal line, then gets the new segment', async ({ dir, upstream }) => {
    const file = path.join(dir, 'legacy.cassette.jsonl')
    await writeFile(file, v3(2))
    // The journal held the snapshot's 2 exchanges and 2 more that never reached a snapshot, and half a line.
    await writeFile(legacyJournalFor(file), [1, 2, 3, 4].map((seq) => JSON.stringify(exchangeAt(seq)) + '\n').join('') + '{"seq":5,')
    const started = await record(file, upstream.url, ['/items/new'])
    expect(started).toMatchObject({ action: 'appended', previous: 4, recovered: 2, convertedFrom: 3, segment: 2 })
    const cassette = await Cassette.load(file)
    expect(cassette.exchanges.map((e) => e.request.url)).toEqual(['/items/1', '/items/2', '/items/3', '/items/4', '/items/new'])
    expect(cassette.segments.map(({ exchanges, ended }) => [exchanges, ended])).toEqual([
      [4, false],
      [1, true],
    ])
    await expect(stat(legacyJournalFor(file))).rejects.toMatchObject({ code: 'ENOENT' })
  })

  it('a journal that is not the cassette\'s continuation (a later recording killed before its first snapshot) becomes a segment of its own', async ({ dir, upstream }) => {
    const file = path.join(dir, 'later.cassette.jsonl')
    await writeFile(file, v3(2))
    await writeFile(legacyJournalFor(file), JSON.stringify(exchangeAt(1, { request: { method: 'GET', url: '/items/other', headers: {}, body: null } })) + '\n')
    expect(await record(file, upstream.url, ['/items/new'])).toMatchObject({ previous: 3, recovered: 1, segment: 3 })
    const cassette = await Cassette.load(file)
    expect(cassette.exchanges.map((e) => e.request.url)).toEqual(['/items/1', '/items/2', '/items/other', '/items/new'])
    expect(cassette.segments.map(({ exchanges, ended, recovered }) => [exchanges, ended, recovered ?? null])).toEqual([
      [2, true, null],
      [1, false, 'journal'],
      [1, true, null],
    ])
  })

  it('effects reported after an exchange\'s line are appended as an effects line and merged on load', async ({ dir, upstream }) => {
    const file = path.join(dir, 'late.cassette.jsonl')
    const proxy = await startProxy({ targets: [upstream.url], record: file })
    await (await fetch(proxy.url + '/items/1')).text()
    const call = upstream.requests.at(-1)?.headers['x-toolstorm-call'] as string
    await proxy.recorder?.checkpoint()
    const reported = await fetch(`${proxy.adminUrl}/effects`, { method: 'POST', headers: { authorization: `Bearer ${proxy.token}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'shipment', key: 'o-1', call }) })
    expect(reported.status).toBe(201)
    await proxy.close()
    const text = await readFile(file, 'utf8')
    expect(text.split('\n').filter((line) => line.startsWith('{"line":"effects"'))).toHaveLength(1)
    const cassette = await Cassette.load(file)
    expect(cassette.exchanges[0]?.effects.map((effect) => [effect.name, effect.key])).toEqual([['shipment', 'o-1']])
  })

  it('toolstorm record appends to the cassette it is given, as proxy --record does', async ({ dir, upstream }) => {
    const file = path.join(dir, 'cli.cassette.jsonl')
    const script = path.join(dir, 'get.mjs')
    await writeFile(script, 'await (await fetch(process.env.TOOLSTORM_PROXY_URL + process.argv[2])).text()\n')
    const first = await runCli(['record', file, '--target', upstream.url, '--port', '0', '--admin-port', '0', '--', process.execPath, script, '/items/1'])
    expect(first.code).toBe(0)
    const second = await runCli(['record', file, '--target', upstream.url, '--port', '0', '--admin-port', '0', '--', process.execPath, script, '/items/2'])
    expect(second.code).toBe(0)
    expect(second.stderr).toContain(`appending to the cassette ${file} (1 exchanges already recorded) as segment 2`)
    expect(second.stderr).toContain(`cassette written to ${file} (1 exchanges appended as segment 2; 2 in all)`)
    expect((await Cassette.load(file)).exchanges.map((e) => e.request.url)).toEqual(['/items/1', '/items/2'])
    await appendFile(file, '')
  })
})
