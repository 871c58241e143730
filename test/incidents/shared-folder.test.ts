/**
 * One incidents folder shared by several processes (pytest-xdist workers' proxies, vitest test
 * files): the bounds hold for the folder, not per process. Each process keeps its incidents under
 * the folder's lock and reads what the others kept first, so the oldest are evicted whoever kept
 * them. Real processes, each with its own store, keeping at once.
 */
import { execFile } from 'node:child_process'
import { readdir, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'
import { createCassetteRecorder } from '../../src/cassette/record/cassette-recorder.js'
import { createStorm } from '../../src/create-storm.js'
import { IncidentStore } from '../../src/incidents/incident-store.js'
import { exchangeAt } from '../helpers/cassette-fixtures.js'
import { ROOT } from '../helpers/cli.js'
import { temporaryFolder } from '../helpers/teardown.js'

/** Keeps `count` incidents (runs `<tag>-<n>`) in the folder `argv[2]`, bounded at `max`, once processes a and b both opened it. */
const KEEPER = `
const [dir, tag, count, max, header, exchange] = process.argv.slice(2)
const { IncidentStore } = await import(${JSON.stringify(pathToFileURL(path.join(ROOT, 'dist/incidents/incident-store.js')).href)})
const { Cassette } = await import(${JSON.stringify(pathToFileURL(path.join(ROOT, 'dist/cassette/format/cassette.js')).href)})
const store = await IncidentStore.open(dir, { maxIncidents: Number(max) })
// Both processes have the folder open before either keeps one: their keeps interleave.
const { existsSync, writeFileSync } = await import('node:fs')
writeFileSync(dir + '/.' + tag + '.ready', '')
while (!(existsSync(dir + '/.a.ready') && existsSync(dir + '/.b.ready'))) await new Promise((resolve) => setTimeout(resolve, 5))
for (let n = 0; n < Number(count); n++) {
  const run = tag + '-' + n
  await store.keep(run, Cassette.from(JSON.parse(header), [{ ...JSON.parse(exchange), run }]), { run }, [{ why: 'fault', detail: 'kept by ' + tag }], 0)
}
`

describe('an incidents folder shared by processes', () => {
  it('holds --max-incidents for the folder: two processes keeping 8 incidents each at once leave 4, and the index agrees', async () => {
    const dir = await temporaryFolder('toolstorm-incidents-shared-')
    // In the folder, where the store reads only incidents and its index.
    const keeper = path.join(dir, 'keeper.mjs')
    await writeFile(keeper, KEEPER)
    const { header } = await createCassetteRecorder(createStorm({})).cassette()
    const exchange = exchangeAt(1, { call: 1, ordinal: 1 })
    const keep = (tag: string) => promisify(execFile)(process.execPath, [keeper, dir, tag, '8', '4', JSON.stringify(header), JSON.stringify(exchange)], { timeout: 60_000 })
    await Promise.all([keep('a'), keep('b')])

    const cassettes = (await readdir(dir)).filter((name) => name.endsWith('.jsonl') && name !== 'index.jsonl')
    expect(cassettes).toHaveLength(4)
    const store = await IncidentStore.open(dir, { maxIncidents: 4 })
    expect(store.incidents.map((entry) => entry.incident).sort()).toEqual(cassettes.sort())
    expect(store.evicted).toBe(12)
    expect((await readdir(dir)).filter((name) => name.endsWith('.report.json'))).toHaveLength(4)
  })
})
