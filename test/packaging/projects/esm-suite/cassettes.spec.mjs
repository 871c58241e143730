// #30 items 4 and 5 from the installed package: a cassette fixture recorded, then replayed with
// nothing reaching its server, and a startProxy({ record }) recording replayed on another port. Runs under CI=1
// (vitest's CI mode records nothing new in `auto`), so the modes are explicit. A file's tests run in
// order (describe.sequential is gone in vitest 5): the second replays what the first recorded.
import http from 'node:http'
import { mkdtemp } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { Cassette, replayCassette } from 'toolstorm/cassette'
import { startProxy } from 'toolstorm/proxy'
import { expect, test } from 'toolstorm/vitest'
import { afterAll, beforeAll, describe } from 'vitest'

let server
let url = ''
let count = 0
beforeAll(async () => {
  server = http.createServer((req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ n: ++count, path: req.url })))
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  url = `http://127.0.0.1:${server.address().port}`
})
afterAll(() => new Promise((resolve) => server.close(() => resolve())))

describe('cassettes from the installed package', () => {
  test('useCassette records the first run', async ({ useCassette }) => {
    const cassette = await useCassette('packaged', { mode: 'record' })
    expect(cassette.mode).toBe('record')
    expect(await (await fetch(`${url}/items/a`)).json()).toEqual({ n: 1, path: '/items/a' })
  })

  test('useCassette replays it strictly, with nothing reaching the server', async ({ useCassette }) => {
    const cassette = await useCassette('packaged', { mode: 'replay' })
    expect(cassette.mode).toBe('replay')
    expect(await (await fetch(`${url}/items/a`)).json()).toEqual({ n: 1, path: '/items/a' })
    expect(count).toBe(1)
  })

  test('startProxy({ record }) stores paths: replayCassette answers on another port', async () => {
    const file = path.join(await mkdtemp(path.join(os.tmpdir(), 'toolstorm-packaged-')), 'proxy.cassette.jsonl')
    const proxy = await startProxy({ targets: [url], record: file })
    expect((await (await fetch(`${proxy.url}/items/b`)).json()).path).toBe('/items/b')
    await proxy.close()
    const cassette = await Cassette.load(file)
    expect(cassette.exchanges.map((e) => e.request.url)).toEqual(['/items/b'])
    const replay = replayCassette(cassette)
    try {
      expect((await (await fetch('http://127.0.0.1:9/items/b')).json()).path).toBe('/items/b')
    } finally {
      replay.dispose()
    }
    replay.assertDone()
  })
})
