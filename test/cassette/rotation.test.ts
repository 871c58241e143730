/**
 * Rotation (`--rotate-size`, `--rotate-every`): a recording into parts with an index, no gap, runs
 * kept whole while they are active, and every file valid after a `kill -9` (docs/incidents.md#rotation).
 */
import { readdir, readFile } from 'node:fs/promises'
import path from 'node:path'
import { describe, expect, onTestFinished, vi } from 'vitest'
import { Cassette } from '../../src/cassette/format/cassette.js'
import { indexFileFor, partFileFor, type IndexLine } from '../../src/cassette/record/cassette-parts.js'
import { startProxy } from '../../src/proxy/proxy-server.js'
import { startCliProxy } from '../helpers/cli-proxy.js'
import { test as it } from '../helpers/file-fixtures.js'

const get = (base: string, p: string, run: string) => fetch(base + p, { headers: { 'x-toolstorm-run': run } }).then((response) => response.text())

/** The index's complete lines (a last line a kill cut short is not one). */
async function indexLines(file: string): Promise<IndexLine[]> {
  const text = await readFile(indexFileFor(file), 'utf8')
  return text.split('\n').slice(0, -1).map((line) => JSON.parse(line) as IndexLine)
}

async function partsOf(dir: string, stem: string): Promise<string[]> {
  return (await readdir(dir)).filter((name) => new RegExp(`^${stem}-\\d{4}\\.jsonl$`).test(name)).sort().map((name) => path.join(dir, name))
}

/**
 * Time stands still for the recorder (and the rest of this process) until the test moves it: a run
 * goes idle when the test says so, not when a loaded machine happens to be slow. Only `Date` is
 * faked (rotation reads `Date.now()`); timers and I/O stay real.
 */
function freezeDate(): void {
  vi.useFakeTimers({ toFake: ['Date'] })
  onTestFinished(() => void vi.useRealTimers())
}

const advanceDate = (ms: number) => vi.setSystemTime(Date.now() + ms)

/** Request URLs of the exchange lines written so far into the parts (a line being written is not one yet). */
async function writtenUrls(dir: string, stem: string): Promise<Set<string>> {
  const urls = new Set<string>()
  for (const part of await partsOf(dir, stem)) {
    for (const line of (await readFile(part, 'utf8')).split('\n').slice(0, -1)) {
      const url = (JSON.parse(line) as { request?: { url?: string } }).request?.url
      if (url !== undefined) urls.add(url)
    }
  }
  return urls
}

describe('rotation', { timeout: 120_000 }, () => {
  it('starts the next part without a gap, keeps an active run in its part until it goes idle, and the index says where each run is', async ({ dir, upstream }) => {
    freezeDate()
    const file = path.join(dir, 'rotated.jsonl')
    // Each line is about 700 bytes: the first part is full after 3.
    const proxy = await startProxy({ targets: [upstream.url], record: { file, rotate: { maxBytes: 2048, runIdleMs: 2000 }, checkpointMs: 100 } })
    // Run a: enough lines to fill the first part, then more while it is still active.
    for (let i = 0; i < 6; i++) await get(proxy.url, `/items/a${i}`, 'a')
    // Run b starts after the rotation: the next part.
    for (let i = 0; i < 2; i++) await get(proxy.url, `/items/b${i}`, 'b')
    // Every line is written (a run's last activity is when its line is), then a goes idle; its next
    // exchanges follow it into the current part, and the index says so.
    await proxy.recorder!.settled()
    await proxy.recorder!.checkpoint()
    advanceDate(2600)
    // The next checkpoint (every 100 ms) closes the first part, a being idle.
    await expect.poll(async () => (await indexLines(file)).some((line) => 'closed' in line && line.part === 'rotated-0001.jsonl'), { timeout: 5000, interval: 20 }).toBe(true)
    await get(proxy.url, '/items/a-late', 'a')
    await proxy.close()

    const parts = await partsOf(dir, 'rotated')
    expect(parts.map((part) => path.basename(part))).toEqual(['rotated-0001.jsonl', 'rotated-0002.jsonl'])
    const [first, second] = await Promise.all(parts.map((part) => Cassette.load(part)))
    expect(first!.exchanges.map((e) => [e.run, e.request.url])).toEqual(Array.from({ length: 6 }, (_, i) => ['a', `/items/a${i}`]))
    expect(second!.exchanges.map((e) => [e.run, e.request.url, e.call])).toEqual([
      ['b', '/items/b0', 1],
      ['b', '/items/b1', 2],
      ['a', '/items/a-late', 7],
    ])
    // Each part is a cassette of its own: a's calls there resume at 7 (a continues line says so), its report there numbers them from 1.
    expect(second!.continuations).toMatchObject([{ seq: 3, run: 'a', from: 'rotated-0001.jsonl', calls: 6 }])
    expect(second!.toReports().map((report) => [report.run, report.calls.map((call) => call.id)])).toEqual([
      ['b', [1, 2]],
      ['a', [1]],
    ])
    const index = await indexLines(file)
    expect(index.filter((line) => 'opened' in line).map((line) => line.part)).toEqual(['rotated-0001.jsonl', 'rotated-0002.jsonl'])
    const closed = index.filter((line): line is Extract<IndexLine, { closed: string }> => 'closed' in line)
    expect(closed.map((line) => [line.part, line.exchanges, line.runs])).toEqual([
      // Closed once a went idle: the later part says where a came from.
      ['rotated-0001.jsonl', 6, [{ run: 'a', exchanges: 6, first: 1, last: 6 }]],
      [
        'rotated-0002.jsonl',
        3,
        [
          { run: 'b', exchanges: 2, first: 1, last: 2 },
          { run: 'a', exchanges: 1, first: 3, last: 3, from: 'rotated-0001.jsonl' },
        ],
      ],
    ])
  })

  it('keeps at most --rotate-keep parts, deleting the oldest and saying so in the index', async ({ dir, upstream }) => {
    freezeDate()
    const file = path.join(dir, 'kept.jsonl')
    const proxy = await startProxy({ targets: [upstream.url], record: { file, rotate: { maxBytes: 1024, keep: 2, runIdleMs: 1 } } })
    for (let i = 0; i < 6; i++) {
      await get(proxy.url, `/items/k${i}`, `run-${i}`)
      advanceDate(5)
    }
    await proxy.close()
    const parts = await partsOf(dir, 'kept')
    expect(parts).toHaveLength(2)
    expect(parts.at(-1)).toBe(partFileFor(file, 6))
    const deleted = (await indexLines(file)).filter((line) => 'deleted' in line)
    expect(deleted.map((line) => line.part)).toEqual(['kept-0001.jsonl', 'kept-0002.jsonl', 'kept-0003.jsonl', 'kept-0004.jsonl'])
    expect(deleted[0]).toMatchObject({ reason: 'keep 2 parts (--rotate-keep)' })
  })

  it('kill -9 while parts rotate under traffic leaves every part and the index valid, with every exchange written before it; a restart continues', async ({ dir, upstream }) => {
    const file = path.join(dir, 'killed.jsonl')
    const start = () => startCliProxy(['--target', upstream.url, '--record', file, '--rotate-size', '1024', '--run-idle', '0.1'])
    const first = await start()
    // Three runs at once, each part holding a line or two: rotations happen all the time.
    const done: Array<{ url: string; phase: number }> = []
    let phase = 1
    let stop = false
    let inFlight = 0
    let resume = () => {}
    let paused: Promise<void> | null = null
    const traffic = [0, 1, 2].map(async (run) => {
      for (let i = 0; !stop; i++) {
        if (paused) await paused
        const p = `/items/r${run}-${i}`
        const at = phase
        inFlight++
        const ok = await get(first.url, p, `run-${run}`).then(() => true, () => false)
        inFlight--
        if (ok) done.push({ url: p, phase: at })
      }
    })
    const answered = (at: number) => done.filter((d) => d.phase === at)
    await expect.poll(async () => answered(1).length > 10 && (await partsOf(dir, 'killed')).length > 3, { timeout: 30_000, interval: 20 }).toBe(true)
    // A pause lets the recorder write what it holds (each new part costs an fsync): until every answered exchange is in a part.
    phase = 0
    paused = new Promise<void>((resolve) => (resume = resolve))
    const unwritten = async () => {
      if (inFlight > 0) return [`${inFlight} request(s) in flight`]
      const written = await writtenUrls(dir, 'killed')
      return answered(1).filter((d) => !written.has(d.url)).map((d) => d.url)
    }
    await expect.poll(unwritten, { timeout: 30_000, interval: 20 }).toEqual([])
    // Then traffic again, and the kill lands in it.
    phase = 2
    paused = null
    resume()
    await expect.poll(() => answered(2).length, { timeout: 30_000, interval: 5 }).toBeGreaterThanOrEqual(3)
    first.child.kill('SIGKILL')
    await first.exited
    stop = true
    await Promise.all(traffic)

    const parts = await partsOf(dir, 'killed')
    expect(parts.length).toBeGreaterThan(3)
    const loaded = await Promise.all(parts.map((part) => Cassette.load(part)))
    const recorded = new Set(loaded.flatMap((cassette) => cassette.exchanges.map((e) => e.request.url)))
    const before = done.filter((d) => d.phase === 1).map((d) => d.url)
    expect(before.length).toBeGreaterThan(10)
    expect(before.filter((url) => !recorded.has(url))).toEqual([])
    await indexLines(file)

    // The same command again: it continues the last part (or starts the next one), every file still valid.
    const second = await start()
    await get(second.url, '/items/after', 'run-after')
    second.child.kill('SIGTERM')
    await second.exited
    const after = await Promise.all((await partsOf(dir, 'killed')).map((part) => Cassette.load(part)))
    expect(after.flatMap((cassette) => cassette.exchanges.map((e) => e.request.url))).toContain('/items/after')
    expect(after.reduce((sum, cassette) => sum + cassette.exchanges.length, 0)).toBe(recorded.size + 1)
  })
})
