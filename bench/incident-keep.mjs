/**
 * What keeping one incident costs once the folder is full: 1,200 incidents (one exchange each)
 * kept in a row into a fresh folder bounded at 1,000, the mean per `keep()` printed, for each
 * root given (a directory with a built `dist/`, this repository's or another build's):
 *
 *   node bench/incident-keep.mjs . ../old
 *
 * Each keep takes the folder's lock and reads the index again only when another process wrote
 * it (src/incidents/incident-store.ts): alone in its folder, a store pays the lock, not the read.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { pathToFileURL } from 'node:url'

const KEPT = 1200
const MAX = 1000

for (const root of process.argv.slice(2)) {
  const load = (file) => import(pathToFileURL(path.resolve(root, 'dist', file)).href)
  const { IncidentStore } = await load('incidents/incident-store.js')
  const { Cassette } = await load('cassette/format/cassette.js')
  const { createCassetteRecorder } = await load('cassette/record/cassette-recorder.js')
  const { createStorm } = await load('create-storm.js')
  const { header } = await createCassetteRecorder(createStorm({})).cassette()
  const exchange = { seq: 1, run: 'r', call: 1, route: 'GET /items/:id', ordinal: 1, key: '#1', parent: null, started: 0.1, elapsed: 0.01, request: { method: 'GET', url: '/items/1', headers: {}, body: null }, outcome: 'response', response: { status: 200, headers: {}, body: null }, upstream: null, executed: true, fault: null, retryAfter: null, error: null, effects: [] }
  const dir = mkdtempSync(path.join(os.tmpdir(), 'toolstorm-incident-keep-'))
  try {
    const store = await IncidentStore.open(dir, { maxIncidents: MAX })
    const started = performance.now()
    for (let n = 0; n < KEPT; n++) {
      const run = `r${n}`
      await store.keep(run, Cassette.from(header, [{ ...exchange, run }]), { run }, [{ why: 'fault', detail: 'bench' }], 0)
    }
    console.log(`${root}: ${((performance.now() - started) / KEPT).toFixed(2)} ms per kept incident (${KEPT} kept, ${store.incidents.length} held, ${store.evicted} evicted)`)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}
