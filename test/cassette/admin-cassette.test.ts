import { afterEach, describe, expect, it } from 'vitest'
import { Cassette } from '../../src/cassette/cassette.js'
import { cassetteAdminRoute } from '../../src/cassette/cassette-admin-route.js'
import { createCassetteRecorder } from '../../src/cassette/cassette-recorder.js'
import { createStorm } from '../../src/engine/storm.js'
import { startProxy, type ProxyServer } from '../../src/proxy/proxy-server.js'
import { startUpstream, type Upstream } from '../helpers/upstream.js'

let proxy: ProxyServer | null = null
let upstream: Upstream | null = null
afterEach(async () => {
  await proxy?.close()
  await upstream?.close()
  proxy = null
  upstream = null
})

describe('cassette export on the admin API', () => {
  it('serves the cassette of one run while recording, and only with the token', async () => {
    upstream = await startUpstream()
    const storm = createStorm({ rules: [{ name: 'busy', route: 'GET /items/*', kind: 'rate_limit', calls: [1], delay: 1 }] })
    const recorder = createCassetteRecorder(storm)
    proxy = await startProxy({ targets: [upstream.url], storm, observer: recorder.observer, adminRoutes: [cassetteAdminRoute(recorder)] })
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
})
