import http from 'node:http'
import net from 'node:net'
import type { AddressInfo } from 'node:net'
import { describe, expect, it } from 'vitest'
import { startProxy } from '../../src/proxy/proxy-server.js'
import { startProxied } from '../helpers/proxied.js'
import { closing, closingServer } from '../helpers/teardown.js'

/** Send raw bytes and collect the reply until the socket closes. */
function raw(port: number, bytes: string): Promise<string> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write(bytes))
    let reply = ''
    socket.on('data', (chunk) => (reply += chunk.toString('latin1')))
    socket.on('close', () => resolve(reply))
    socket.on('error', () => resolve(reply))
    socket.setTimeout(3000, () => socket.destroy())
  })
}

describe('proxy hardening', () => {
  it.each([
    ['duplicate Content-Length', 'POST /ship HTTP/1.1\r\nHost: localhost\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd'],
    ['Content-Length with Transfer-Encoding', 'POST /ship HTTP/1.1\r\nHost: localhost\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n'],
    ['an obfuscated Transfer-Encoding', 'POST /ship HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked-false\r\n\r\n1\r\nA\r\n0\r\n\r\nGET /flag HTTP/1.1\r\nHost: localhost\r\n\r\n'],
    ['a header without a colon', 'GET /items/a HTTP/1.1\r\nHost: localhost\r\nbroken header\r\n\r\n'],
    ['a NUL in a header value', 'GET /items/a HTTP/1.1\r\nHost: localhost\r\nX-A: a\u0000b\r\n\r\n'],
    ['an invalid chunk size', 'POST /ship HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n0x5\r\nhello\r\n0\r\n\r\n'],
  ])('answers 400 to %s and never reaches the upstream', async (_name, bytes) => {
    const env = closing(await startProxied('reverse', { rules: [] }))
    const reply = await raw(Number(new URL(env.proxy.url).port), bytes)
    expect(reply.startsWith('HTTP/1.1 400 Bad Request')).toBe(true)
    expect(env.upstream.hits()).toBe(0)
  })

  it('answers 431 to oversized headers', async () => {
    const env = closing(await startProxied('reverse', { rules: [] }))
    const reply = await raw(Number(new URL(env.proxy.url).port), `GET /items/a HTTP/1.1\r\nHost: localhost\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`)
    expect(reply.startsWith('HTTP/1.1 431 Request Header Fields Too Large')).toBe(true)
    expect(env.upstream.hits()).toBe(0)
  })

  // Short lines: 2100 of them fit in the 16 KiB head limit, so the count is what is refused.
  const manyLines = (n: number) => Array.from({ length: n }, (_, i) => `${i.toString(36)}:v\r\n`).join('')

  it('answers 431 to a request of more than 2000 header lines instead of forwarding it without its Content-Length and body', async () => {
    const env = closing(await startProxied('reverse', { rules: [] }))
    const reply = await raw(Number(new URL(env.proxy.url).port), `POST /echo HTTP/1.1\r\nHost: localhost\r\n${manyLines(2100)}Content-Length: 5\r\n\r\nhello`)
    expect(reply.startsWith('HTTP/1.1 431 Request Header Fields Too Large')).toBe(true)
    expect(env.upstream.hits()).toBe(0)
  })

  it('answers 502 to an upstream response of more than 2000 header lines instead of relaying it', async () => {
    const upstream = http.createServer((_req, res) => {
      const flat = Array.from({ length: 2100 }, (_, i) => [i.toString(36), 'v']).flat()
      res.writeHead(200, [...flat, 'content-length', '5'])
      res.end('hello')
    })
    closingServer(upstream)
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve))
    const proxy = closing(await startProxy({ targets: [`http://127.0.0.1:${(upstream.address() as AddressInfo).port}`] }))
    const response = await fetch(`${proxy.url}/many`)
    expect(response.status).toBe(502)
    expect(await response.text()).toContain('UPSTREAM_BAD_RESPONSE')
  })

  it('answers 502 with a clear body when the upstream is unreachable, and keeps serving', async () => {
    const closed = net.createServer()
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve))
    const port = (closed.address() as AddressInfo).port
    await new Promise<void>((resolve) => closed.close(() => resolve()))
    const proxy = closing(await startProxy({ targets: [`http://127.0.0.1:${port}`] }))
    for (let i = 0; i < 2; i++) {
      const response = await fetch(`${proxy.url}/items/a`)
      expect(response.status).toBe(502)
      expect(await response.json()).toEqual({
        error: { type: 'upstream_unreachable', code: 'ERR_UPSTREAM_UNREACHABLE', message: `[toolstorm] Failed to reach the upstream for "GET http://127.0.0.1:${port}/items/a": ECONNREFUSED.` },
      })
    }
    expect(proxy.storm.report().calls.map((c) => [c.status, c.executed, c.error])).toEqual([
      [502, false, 'UPSTREAM_UNREACHABLE'],
      [502, false, 'UPSTREAM_UNREACHABLE'],
    ])
  })

  it('does not leak the upstream socket when the client disconnects mid-body', async () => {
    let upstreamSawClose = false
    let bodyArrived = () => {}
    const midBody = new Promise<void>((resolve) => (bodyArrived = resolve))
    const upstream = http.createServer((req) => {
      req.on('close', () => (upstreamSawClose = true))
      req.once('data', () => bodyArrived())
      req.resume()
    })
    closingServer(upstream)
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve))
    const proxy = closing(await startProxy({ targets: [`http://127.0.0.1:${(upstream.address() as AddressInfo).port}`] }))
    const socket = net.connect(Number(new URL(proxy.url).port), '127.0.0.1')
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()))
    socket.write('POST /upload HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100000\r\n\r\n' + 'a'.repeat(1000))
    // Once the upstream is reading the body the proxy relays.
    await midBody
    socket.destroy()
    const connections = () => new Promise<number>((resolve) => upstream.getConnections((_e, n) => resolve(n)))
    // Closing propagates through two sockets; give a loaded machine time, but bound it.
    for (let i = 0; i < 120 && (!upstreamSawClose || (await connections()) > 0); i++) await new Promise((resolve) => setTimeout(resolve, 25))
    expect(upstreamSawClose).toBe(true)
    expect(await connections()).toBe(0)
    for (let i = 0; i < 120 && proxy.storm.report().calls[0]?.outcome === 'running'; i++) await new Promise((resolve) => setTimeout(resolve, 25))
    expect(proxy.storm.report().calls[0]).toMatchObject({ outcome: 'cancelled', error: 'CLIENT_ABORTED' })
  })

  it('strips hop-by-hop and control headers, and tells the upstream the exchange id', async () => {
    const env = closing(await startProxied('reverse', { rules: [] }))
    const port = Number(new URL(env.proxy.url).port)
    const reply = await raw(
      port,
      'POST /echo HTTP/1.1\r\nHost: localhost\r\nConnection: close, X-Secret-Hop\r\nX-Secret-Hop: 1\r\nKeep-Alive: timeout=5\r\nTE: trailers\r\nProxy-Authorization: Basic YTpi\r\nX-Toolstorm-Key: order-1\r\nX-Toolstorm-Run: w9\r\nX-End-To-End: kept\r\nContent-Length: 2\r\n\r\nhi',
    )
    const body = JSON.parse(reply.slice(reply.indexOf('\r\n\r\n') + 4)) as { headers: Record<string, string>; body: string }
    expect(body.body).toBe('hi')
    expect(body.headers['x-end-to-end']).toBe('kept')
    for (const name of ['x-secret-hop', 'keep-alive', 'te', 'proxy-authorization', 'x-toolstorm-key', 'x-toolstorm-run']) expect(body.headers[name]).toBeUndefined()
    expect(body.headers['x-toolstorm-call']).toMatch(/^[0-9a-f]{8}-[0-9a-z]+-[\w-]{8}$/)
    expect((await env.report('w9')).calls[0]?.key).toBe('order-1')
  })

  it('never sends a request upstream twice, even when the upstream resets it', async () => {
    let seen = 0
    const upstream = http.createServer((req) => {
      seen++
      req.socket.resetAndDestroy()
    })
    closingServer(upstream)
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve))
    const proxy = closing(await startProxy({ targets: [`http://127.0.0.1:${(upstream.address() as AddressInfo).port}`] }))
    // The reset is passed on (#36), never retried.
    const error = await fetch(`${proxy.url}/items/a`).then(
      () => null,
      (e: unknown) => e as TypeError & { cause: NodeJS.ErrnoException },
    )
    expect(error?.cause?.code).toBe('ECONNRESET')
    expect(seen).toBe(1)
  })

  it('refuses to forward to itself in forward mode', async () => {
    const proxy = closing(await startProxy({}))
    const response = await new Promise<number>((resolve) => {
      const port = new URL(proxy.url).port
      http.get({ host: '127.0.0.1', port, path: `http://localhost:${port}/loop` }, (res) => {
        res.resume()
        resolve(res.statusCode ?? 0)
      })
    })
    expect(response).toBe(508)
  })

  it('answers origin-form requests in forward mode with a hint', async () => {
    const proxy = closing(await startProxy({}))
    const response = await fetch(`${proxy.url}/items/a`)
    expect(response.status).toBe(400)
    expect(((await response.json()) as { error: { message: string } }).error.message).toContain('forward mode: send absolute-form requests')
  })

  it('answers a path no named target is mounted at with the mounted targets', async () => {
    const env = closing(await startProxied('reverse', { rules: [] }))
    const proxy = closing(await startProxy({ targets: [`shop=${env.upstream.url}`, `llm=${env.upstream.url}`] }))
    const ok = await fetch(`${proxy.url}/shop/items/a`)
    expect(ok.status).toBe(200)
    expect(env.upstream.requests.at(-1)?.url).toBe('/items/a')
    const missing = await fetch(`${proxy.url}/other/x`)
    expect(missing.status).toBe(404)
    expect(((await missing.json()) as { error: { message: string } }).error.message).toBe('[toolstorm] No target is mounted at /other/x. The mounted targets are: /shop/, /llm/.')
    expect(proxy.storm.report().calls[0]?.route).toBe('GET /shop/items/a')
  })

  it('listens on loopback only by default', async () => {
    const proxy = closing(await startProxy({}))
    expect(new URL(proxy.url).hostname).toBe('127.0.0.1')
    expect(new URL(proxy.adminUrl).hostname).toBe('127.0.0.1')
  })
})
