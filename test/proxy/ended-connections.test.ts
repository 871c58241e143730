/**
 * Every way an exchange can end early leaves nothing of its client connection in the data plane
 * (#31): after N endings on real sockets and full garbage collections, none of the sockets the
 * proxy accepted is still referenced. Each native parser held its connection (socket, request,
 * response, exchange) until it was freed, which nothing did: every ended connection stayed.
 */
import http from 'node:http'
import net from 'node:net'
import { describe, expect, it, onTestFinished } from 'vitest'
import { Cassette } from '../../src/cassette/format/cassette.js'
import { startReplayServer } from '../../src/proxy/replay/replay-server.js'
import type { StormConfigInput } from '../../src/engine/schema/config.js'
import { startProxy, type ProxyOptions } from '../../src/proxy/proxy-server.js'
import { closing } from '../helpers/teardown.js'
import { abandonConnect } from '../helpers/abandon-connect.js'
import { exchangeAt } from '../helpers/cassette-fixtures.js'
import { trackSockets, type TrackedSockets } from '../helpers/collected.js'
import { startModelUpstream, type ModelUpstream } from '../helpers/model-upstream.js'
import { hasRedis, startRedis, type RedisServer } from '../helpers/redis-server.js'
import { startResettingServer, startUpstream, type Upstream } from '../helpers/upstream.js'

/** Endings per case: enough that a leak shows as N sockets, few enough for a loaded CI machine. */
const N = 12

async function upstreams(): Promise<{ tool: Upstream; model: ModelUpstream }> {
  const tool = await startUpstream()
  const model = await startModelUpstream({ gapMs: 30 })
  onTestFinished(() => tool.close())
  onTestFinished(() => model.close())
  return { tool, model }
}

/** A proxy over `target` whose data-plane sockets are tracked from now on. */
async function proxyWith(config: StormConfigInput, options: ProxyOptions): Promise<{ url: string; adminUrl: string; token: string; sockets: TrackedSockets }> {
  const proxy = await startProxy({ config, ...options })
  onTestFinished(() => proxy.close())
  const sockets = trackSockets('accepted', Number(new URL(proxy.url).port))
  onTestFinished(() => sockets.stop())
  return { url: proxy.url, adminUrl: proxy.adminUrl, token: proxy.token, sockets }
}

/** One request on its own connection (the client asks to close it); resolves with the status, or the error code. */
function request(url: string, init: { method?: string; body?: string; abortAfterMs?: number } = {}): Promise<number | string> {
  return new Promise((resolve) => {
    const req = http.request(url, { method: init.method ?? 'GET', agent: false, headers: init.body ? { 'content-type': 'application/json' } : {} }, (res) => {
      res.resume()
      res.on('end', () => resolve(res.statusCode ?? 0))
      res.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? 'error'))
    })
    req.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? 'error'))
    if (init.abortAfterMs !== undefined) setTimeout(() => req.destroy(Object.assign(new Error('gave up'), { code: 'GAVE_UP' })), init.abortAfterMs)
    req.end(init.body)
  })
}

/** A raw client: sends `bytes`, waits for `waitFor` bytes of answer (0: none), then leaves with a FIN or a RST. */
function rawClient(url: string, bytes: string, leave: 'fin' | 'rst', waitFor = 0): Promise<void> {
  const { hostname, port } = new URL(url)
  return new Promise((resolve) => {
    const socket = net.connect(Number(port), hostname)
    let received = 0
    socket.on('error', () => undefined)
    socket.once('close', () => resolve())
    const go = () => (leave === 'rst' ? socket.resetAndDestroy() : socket.destroy())
    socket.on('data', (chunk: Buffer) => {
      received += chunk.length
      if (waitFor > 0 && received >= waitFor) go()
    })
    socket.once('connect', () => {
      socket.write(bytes)
      if (waitFor === 0) setTimeout(go, 20)
    })
  })
}

async function times(n: number, run: (i: number) => Promise<unknown>): Promise<void> {
  for (let i = 0; i < n; i++) await run(i)
}

/** The proxy's own sockets to an upstream (its pool's), tracked from now on. */
function upstreamSockets(url: string): TrackedSockets {
  const sockets = trackSockets('connected', Number(new URL(url).port))
  onTestFinished(() => sockets.stop())
  return sockets
}

async function expectAllCollected(sockets: TrackedSockets, count: number): Promise<void> {
  await sockets.allClosed(count)
  expect(await sockets.stillReferenced()).toBe(0)
}

describe('the data plane keeps nothing of connections that ended', () => {
  it('after reset faults and lost responses', async () => {
    const { tool } = await upstreams()
    const { url, sockets } = await proxyWith(
      {
        rules: [
          { name: 'reset', route: 'GET /items/*', kind: 'reset' },
          { name: 'lost', route: 'POST /ship', kind: 'response_lost' },
        ],
      },
      { targets: [tool.url] },
    )
    await times(N, async (i) => expect(await request(`${url}/items/${i}`)).toBe('ECONNRESET'))
    await times(N, async (i) => expect(await request(`${url}/ship`, { method: 'POST', body: `{"order":"o-${i}"}` })).toBe('ECONNRESET'))
    expect(tool.commits).toHaveLength(N)
    await expectAllCollected(sockets, 2 * N)
  })

  it('after clients that leave mid-request and mid-response, with a FIN or a RST, on the fast path and through the flow', async () => {
    const { tool, model } = await upstreams()
    const { url, sockets } = await proxyWith({ rules: [{ name: 'drop', route: 'GET /ticks/ticks', kind: 'drop_terminal' }] }, { targets: [`ticks=${model.url}`, tool.url] })
    const pool = upstreamSockets(model.url)
    const partial = 'POST /ship HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{"order":'
    await times(N / 2, () => rawClient(url, partial, 'fin'))
    await times(N / 2, () => rawClient(url, partial, 'rst'))
    // A long stream, left after its head and first events: on the fast path (no rule) and under a stream rule.
    const stream = (path: string) => `GET ${path} HTTP/1.1\r\nhost: localhost\r\n\r\n`
    await times(N / 2, (i) => rawClient(url, stream('/ticks/plain?bytes=200000'), i % 2 ? 'rst' : 'fin', 200))
    await times(N / 2, (i) => rawClient(url, stream('/ticks/ticks?count=50'), i % 2 ? 'rst' : 'fin', 200))
    await expectAllCollected(sockets, 2 * N)
    // The upstream requests of the clients that left were aborted: their pool connections closed.
    expect(pool.closed).toBeGreaterThanOrEqual(N)
    expect(await pool.stillReferenced()).toBe(0)
  })

  it('after an upstream that resets, timeouts (answered, and given up by the client), and cut and stalled streams', async () => {
    const { model } = await upstreams()
    const resetting = await startResettingServer()
    onTestFinished(() => resetting.close())
    const { url, sockets } = await proxyWith(
      {
        rules: [
          { name: 'slow', route: 'GET /ticks/slow', kind: 'timeout', delay: 0.02 },
          { name: 'held', route: 'GET /ticks/held', kind: 'timeout', delay: 30 },
          { name: 'cut', route: 'GET /cut/ticks', kind: 'stream_cut', after: 1 },
          { name: 'stall', route: 'GET /stall/ticks', kind: 'stream_stall', after: 1, delay: 0.05 },
        ],
      },
      { targets: [`ticks=${model.url}`, `cut=${model.url}`, `stall=${model.url}`, `dead=${resetting.url}`] },
    )
    const pool = upstreamSockets(resetting.url)
    await times(N / 2, async () => expect(await request(`${url}/dead/x`)).toBe('ECONNRESET'))
    await times(N / 2, async () => expect(await request(`${url}/ticks/slow`)).toBe(504))
    await times(N / 2, async () => expect(await request(`${url}/ticks/held`, { abortAfterMs: 30 })).toBe('GAVE_UP'))
    await times(N / 2, async () => expect(await request(`${url}/cut/ticks?count=5`)).not.toBe(200))
    await times(N / 2, async () => expect(await request(`${url}/stall/ticks?count=5`)).not.toBe(200))
    await expectAllCollected(sockets, (5 * N) / 2)
    await pool.allClosed(N / 2)
    expect(await pool.stillReferenced()).toBe(0)
  })

  it('after CONNECT tunnels abandoned before and during the TLS handshake', async () => {
    const { sockets, url } = await proxyWith({}, {})
    await times(N / 2, () => abandonConnect(url, 'before-tunnel').then((socket) => socket.resume()))
    await times(N / 2, () => abandonConnect(url, 'mid-handshake').then((socket) => socket.resume()))
    await expectAllCollected(sockets, N)
  })

  it('after replayed resets', async () => {
    const recorded = Array.from({ length: N }, (_, i) => exchangeAt(i + 1, { outcome: 'reset', response: null, error: 'ECONNRESET' }))
    const replay = await startReplayServer(Cassette.from({}, recorded))
    closing(replay)
    const sockets = trackSockets('accepted', Number(new URL(replay.url).port))
    onTestFinished(() => sockets.stop())
    await times(N, async (i) => expect(await request(`${replay.url}/items/${i + 1}`)).toBe('ECONNRESET'))
    await expectAllCollected(sockets, N)
  })

  it.runIf(hasRedis)('after resets on a replica sharing its runs through Redis (--state)', async () => {
    const redis: RedisServer = await startRedis()
    onTestFinished(() => redis.close())
    const { tool } = await upstreams()
    const { url, sockets } = await proxyWith({ rules: [{ name: 'reset', route: 'GET /items/*', kind: 'reset' }] }, { targets: [tool.url], state: { url: redis.url, prefix: 'ended' } })
    await times(N, async (i) => expect(await request(`${url}/items/${i}`)).toBe('ECONNRESET'))
    await expectAllCollected(sockets, N)
  })

  it('after event-stream subscribers that left, whether they read or not', async () => {
    const { tool } = await upstreams()
    const { url, adminUrl, token } = await proxyWith({}, { targets: [tool.url] })
    const admin = trackSockets('accepted', Number(new URL(adminUrl).port))
    onTestFinished(() => admin.stop())
    const subscribe = `GET /events HTTP/1.1\r\nhost: ${new URL(adminUrl).host}\r\nauthorization: Bearer ${token}\r\n\r\n`
    await times(N / 2, async (i) => {
      const reading = rawClient(adminUrl, subscribe, i % 2 ? 'rst' : 'fin', 1)
      await request(`${url}/items/${i}`)
      await reading
    })
    // Subscribers that never read: the server's writes wait for them until they leave.
    const stuck = await Promise.all(
      Array.from({ length: N / 2 }, () => {
        const socket = net.connect(Number(new URL(adminUrl).port), '127.0.0.1', () => socket.write(subscribe))
        socket.on('error', () => undefined)
        socket.pause()
        return socket
      }),
    )
    await times(N, (i) => request(`${url}/items/${i}`))
    for (const socket of stuck) socket.resetAndDestroy()
    await expectAllCollected(admin, N)
  })
})
