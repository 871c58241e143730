// Response bodies through the proxy arrive byte for byte, also when the proxy hands the upstream
// socket's own read buffer to the client write (upstream-pool.ts, READ_BUFFER_BYTES): a slow
// client keeps those bytes queued while other clients reuse the upstream connections.
import http from 'node:http'
import { once } from 'node:events'
import net, { type AddressInfo } from 'node:net'
import { describe, expect, it, onTestFinished } from 'vitest'
import { startProxy, type ProxyServer } from '../../src/proxy/proxy-server.js'
import { closingServer } from '../helpers/teardown.js'

/** Body `id` of `size` bytes: hashed bytes, so no stretch of one body repeats elsewhere in it or in another. */
function body(id: number, size: number): Buffer {
  const bytes = Buffer.allocUnsafe(size)
  for (let i = 0; i < size; i++) bytes[i] = Math.imul(i ^ Math.imul(id, 0x9e3779b9), 0x85ebca6b) >>> 24
  return bytes
}

async function start(): Promise<{ proxy: ProxyServer; upstreamConnections: () => number }> {
  let connections = 0
  const upstream = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x')
    const bytes = body(Number(url.searchParams.get('id')), Number(url.searchParams.get('size')))
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': bytes.length })
    res.end(bytes)
  })
  upstream.on('connection', () => connections++)
  upstream.listen(0, '127.0.0.1')
  await once(upstream, 'listening')
  closingServer(upstream)
  const proxy = await startProxy({ targets: [`http://127.0.0.1:${(upstream.address() as AddressInfo).port}`] })
  onTestFinished(() => proxy.close())
  return { proxy, upstreamConnections: () => connections }
}

/** GET through `agent`, reading the response `slowly` (a pause after every chunk) or at once. */
function get(agent: http.Agent, base: string, id: number, size: number, slowly: boolean): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    http
      .get(`${base}/b?id=${id}&size=${size}`, { agent }, (res) => {
        const chunks: Buffer[] = []
        res.on('data', (chunk: Buffer) => {
          chunks.push(chunk)
          if (slowly) {
            res.pause()
            setTimeout(() => res.resume(), 1)
          }
        })
        res.on('end', () => resolve(Buffer.concat(chunks)))
        res.on('error', reject)
      })
      .on('error', reject)
  })
}

describe('response bodies through the proxy', () => {
  it('reach a slow client byte for byte while fast clients reuse the upstream connections meanwhile', async () => {
    const { proxy, upstreamConnections } = await start()
    const slowAgent = new http.Agent({ keepAlive: true, maxSockets: 1 })
    const fastAgent = new http.Agent({ keepAlive: true, maxSockets: 4 })
    onTestFinished(async () => {
      slowAgent.destroy()
      fastAgent.destroy()
    })
    let slowDone = false
    let nextId = 100
    const mismatches: string[] = []
    const check = (received: Buffer, id: number, size: number) => {
      const expected = body(id, size)
      if (!received.equals(expected)) mismatches.push(`body ${id} (${size} B): ${received.length} B received, first difference at ${received.findIndex((b, i) => b !== expected[i])}`)
    }
    const slow = (async () => {
      // Bodies larger than the proxy's read buffer (96 KiB) and the socket buffers, so the last
      // read's bytes are still queued on the client socket when the upstream response ends.
      for (let id = 1; id <= 6; id++) check(await get(slowAgent, proxy.url, id, 2 * 1024 * 1024 + id * 1000, true), id, 2 * 1024 * 1024 + id * 1000)
      slowDone = true
    })()
    let fastRequests = 0
    const fast = Array.from({ length: 4 }, async () => {
      while (!slowDone && fastRequests < 2_000) {
        const id = nextId++
        const size = 100 * 1024 + (id % 7) * 4096
        fastRequests++
        check(await get(fastAgent, proxy.url, id, size, false), id, size)
      }
    })
    await Promise.all([slow, ...fast])
    expect(mismatches).toEqual([])
    // The fast clients really ran alongside, over more than one kept-alive upstream connection.
    expect(fastRequests).toBeGreaterThan(20)
    expect(upstreamConnections()).toBeLessThan(fastRequests)
  })

  it('reach a client that pipelines requests and reads nothing for a while: its answers queue up on its socket', async () => {
    const { proxy, upstreamConnections } = await start()
    const { port } = new URL(proxy.url)
    const client = net.connect(Number(port), '127.0.0.1')
    onTestFinished(() => void client.destroy())
    await once(client, 'connect')
    // Bodies that fit one read of the proxy's buffer (96 KiB), each written to the client straight
    // from it; 9 MiB in all, more than loopback socket buffers hold for a client that does not read
    // (4 MiB send buffer at most, 128 KiB receive window, as Linux sets them by default).
    const ids = Array.from({ length: 110 }, (_, i) => i + 1)
    const size = (id: number) => 80 * 1024 + id * 64
    client.pause()
    client.write(ids.map((id) => `GET /b?id=${id}&size=${size(id)} HTTP/1.1\r\nhost: localhost\r\n\r\n`).join(''))
    // Meanwhile the socket's buffers fill and the proxy's writes queue up behind them (nothing
    // marks them full: a fixed while).
    await new Promise((resolve) => setTimeout(resolve, 300))
    const raw: Buffer[] = []
    const expectedBytes = ids.reduce((sum, id) => sum + size(id), 0)
    let bodyBytes = 0
    client.on('data', (chunk: Buffer) => raw.push(chunk))
    client.resume()
    const bodies: Buffer[] = []
    while (bodyBytes < expectedBytes) {
      await new Promise((resolve) => setTimeout(resolve, 10))
      let all = Buffer.concat(raw)
      bodies.length = 0
      bodyBytes = 0
      for (;;) {
        const headEnd = all.indexOf('\r\n\r\n')
        if (headEnd === -1) break
        const length = Number(/content-length: (\d+)/i.exec(all.subarray(0, headEnd).toString('latin1'))?.[1])
        if (all.length < headEnd + 4 + length) break
        bodies.push(all.subarray(headEnd + 4, headEnd + 4 + length))
        bodyBytes += length
        all = all.subarray(headEnd + 4 + length)
      }
    }
    expect(bodies.map((bytes, i) => bytes.equals(body(ids[i] as number, size(ids[i] as number))))).toEqual(ids.map(() => true))
    // Answers still queued on the client socket kept their upstream connection out of use.
    expect(upstreamConnections()).toBeGreaterThan(1)
  })

  it('arrive intact when a body spans several reads of the upstream socket', async () => {
    const { proxy } = await start()
    const agent = new http.Agent({ keepAlive: true, maxSockets: 2 })
    onTestFinished(async () => agent.destroy())
    // Around the proxy's read buffer (96 KiB, the head included), and far past it.
    const sizes = [1, 95 * 1024, 96 * 1024, 96 * 1024 + 1, 300 * 1024, 5 * 1024 * 1024]
    const received = await Promise.all(sizes.map((size, i) => get(agent, proxy.url, i + 1, size, false)))
    received.forEach((bytes, i) => expect(bytes.equals(body(i + 1, sizes[i] as number)), `body ${i + 1} of ${sizes[i]} B`).toBe(true))
  })
})
