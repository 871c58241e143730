import { describe, expect, it } from 'vitest'
import { mkdtemp, readdir, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { Cassette } from '../../src/cassette/format/cassette.js'
import { cassetteAdminRoute } from '../../src/proxy/admin/cassette-admin-route.js'
import { createCassetteRecorder } from '../../src/cassette/record/cassette-recorder.js'
import { createStorm } from '../../src/create-storm.js'
import { startProxy } from '../../src/proxy/proxy-server.js'
import { BYTES, startUpstream } from '../helpers/upstream.js'
import { closing } from '../helpers/teardown.js'

describe('cassette export on the admin API', () => {
  it('serves the cassette of one run while recording, and only with the token', async () => {
    const upstream = closing(await startUpstream())
    const storm = createStorm({ rules: [{ name: 'busy', route: 'GET /items/*', kind: 'rate_limit', calls: [1], delay: 1 }] })
    const recorder = createCassetteRecorder(storm)
    const proxy = closing(await startProxy({ targets: [upstream.url], storm, observer: recorder.observer, adminRoutes: [cassetteAdminRoute(recorder)] }))
    await fetch(`${proxy.url}/items/a`, { headers: { 'x-toolstorm-run': 'w1' } })
    await fetch(`${proxy.url}/items/b`, { headers: { 'x-toolstorm-run': 'w2' } })
    expect((await fetch(`${proxy.adminUrl}/cassette?run=w1`)).status).toBe(401)
    const response = await fetch(`${proxy.adminUrl}/cassette?run=w1`, { headers: { authorization: `Bearer ${proxy.token}` } })
    expect(response.status).toBe(200)
    const cassette = Cassette.parse(await response.text())
    expect(cassette.exchanges.map((e) => [e.seq, e.run, e.response?.status])).toEqual([[1, 'w1', 429]])
    const missing = await fetch(`${proxy.adminUrl}/cassette?run=nope`, { headers: { authorization: `Bearer ${proxy.token}` } })
    expect(missing.status).toBe(404)
    await recorder.close()
  })

  it('forgets one run with DELETE /cassette?run= (its exchanges leave the recording, the others stay), and refuses it for a recorder that writes a file', async () => {
    const upstream = closing(await startUpstream())
    const storm = createStorm({})
    const recorder = createCassetteRecorder(storm)
    const proxy = closing(await startProxy({ targets: [upstream.url], storm, observer: recorder.observer, adminRoutes: [cassetteAdminRoute(recorder)] }))
    const admin = (method: string, what: string) => fetch(`${proxy.adminUrl}${what}`, { method, headers: { authorization: `Bearer ${proxy.token}` } })
    for (const run of ['w1', 'w2', 'w1']) await (await fetch(`${proxy.url}/items/${run}`, { headers: { 'x-toolstorm-run': run } })).text()
    expect(recorder.size).toBe(3)
    const forgotten = await admin('DELETE', '/cassette?run=w1')
    expect(await forgotten.json()).toEqual({ ok: true, run: 'w1', exchanges: 2 })
    expect((await admin('GET', '/cassette?run=w1')).status).toBe(404)
    expect((await recorder.cassette()).exchanges.map((exchange) => exchange.run)).toEqual(['w2'])
    expect((await admin('DELETE', '/cassette')).status).toBe(400)
    // Forgotten while its exchange is in flight: its line is not written when it ends, and forgetting did not wait for it.
    const slow = fetch(`${proxy.url}/slow?ms=300`, { headers: { 'x-toolstorm-run': 'w3' } }).then((response) => response.text())
    await expect.poll(() => upstream.hits('/slow'), { timeout: 5000, interval: 5 }).toBe(1)
    expect(await (await admin('DELETE', '/cassette?run=w3')).json()).toEqual({ ok: true, run: 'w3', exchanges: 0 })
    await slow
    expect((await recorder.cassette()).exchanges.map((exchange) => exchange.run)).toEqual(['w2'])
    await recorder.close()
    const dir = await mkdtemp(path.join(os.tmpdir(), 'toolstorm-admin-cassette-'))
    try {
      const onFile = createCassetteRecorder(createStorm({}), { file: path.join(dir, 'kept.cassette.jsonl') })
      await expect(onFile.forget('w1')).rejects.toMatchObject({ code: 'ERR_STATE' })
      await onFile.close()
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })

  it('exports one complete file (large bodies inline) that marks the bodies cut at the body limit and counts them in a header', async () => {
    const upstream = closing(await startUpstream())
    const dir = await mkdtemp(path.join(os.tmpdir(), 'toolstorm-admin-cassette-'))
    try {
      const storm = createStorm({})
      // Recording into a file keeps large bodies in body files; the export has them inline.
      const recorder = createCassetteRecorder(storm, { file: path.join(dir, 'live.cassette.jsonl'), bodyLimit: 100_000 })
      const proxy = closing(await startProxy({ targets: [upstream.url], storm, observer: recorder.observer, adminRoutes: [cassetteAdminRoute(recorder)] }))
      await (await fetch(`${proxy.url}/bytes/80000`, { headers: { 'x-toolstorm-run': 'big' } })).arrayBuffer()
      await (await fetch(`${proxy.url}/bytes/150000`, { headers: { 'x-toolstorm-run': 'big' } })).arrayBuffer()
      const response = await fetch(`${proxy.adminUrl}/cassette?run=big`, { headers: { authorization: `Bearer ${proxy.token}` } })
      expect(await readdir(path.join(dir, 'live.cassette.bodies'))).toHaveLength(2)
      expect(response.headers.get('x-toolstorm-cut-bodies')).toBe('1')
      const cassette = Cassette.parse(await response.text())
      const [whole, cut] = cassette.exchanges.map((exchange) => exchange.response!.body!)
      expect(Buffer.from(whole!.data, 'base64').equals(BYTES.subarray(0, 80_000))).toBe(true)
      expect(cut).toMatchObject({ size: 150_000, truncated: true })
      expect(Buffer.from(cut!.data, 'base64').equals(BYTES.subarray(0, 100_000))).toBe(true)
      await recorder.close()
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })
})
