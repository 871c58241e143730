// The proxy's own upstream client, against real servers on loopback: keep-alive reuse, message
// framing (HEAD, 204, 1xx, close-delimited, chunked request bodies), failures that must never be
// retried, and the native parser contract it relies on.
import http from 'node:http'
import net from 'node:net'
import { once } from 'node:events'
import { Readable } from 'node:stream'
import { describe, expect, it, onTestFinished } from 'vitest'
import { keepAliveHintMs, UpstreamPool, type UpstreamCall, type UpstreamRequestHead } from '../../src/proxy/upstream/upstream-pool.js'
import { closingServer } from '../helpers/teardown.js'

interface Result {
  status: number
  headers: Record<string, string | string[]>
  body: string
}

function send(pool: UpstreamPool, origin: string, head: Partial<UpstreamRequestHead> & { path: string }, body: Readable | null = null): Promise<Result> {
  return new Promise((resolve, reject) => {
    let status = 0
    let headers: Record<string, string | string[]> = {}
    const chunks: Buffer[] = []
    pool.request(origin, { method: 'GET', headers: { host: new URL(origin).host }, ...head }, body, {
      onHead(code, map) {
        status = code
        headers = map
      },
      onData(chunk) {
        chunks.push(Buffer.from(chunk))
      },
      onEnd() {
        resolve({ status, headers, body: Buffer.concat(chunks).toString('utf8') })
      },
      onError: reject,
    })
  })
}

async function httpServer(handler: http.RequestListener): Promise<{ origin: string; connections: () => number; requests: () => number }> {
  let connections = 0
  let requests = 0
  const server = http.createServer((req, res) => {
    requests++
    handler(req, res)
  })
  server.on('connection', () => connections++)
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  closingServer(server)
  const { port } = server.address() as net.AddressInfo
  return { origin: `http://127.0.0.1:${port}`, connections: () => connections, requests: () => requests }
}

/** A server that answers with raw bytes, to produce what node:http would refuse to. */
async function rawServer(onRequest: (socket: net.Socket, request: string) => void): Promise<{ origin: string; requests: () => number; connections: () => number }> {
  let requests = 0
  const server = net.createServer((socket) => {
    let seen = ''
    socket.on('data', (data) => {
      seen += data.toString('latin1')
      if (!seen.includes('\r\n\r\n')) return
      requests++
      const request = seen
      seen = ''
      onRequest(socket, request)
    })
    socket.on('error', () => undefined)
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const sockets = new Set<net.Socket>()
  server.on('connection', (socket) => sockets.add(socket))
  onTestFinished(() => {
    for (const socket of sockets) socket.destroy()
    return new Promise<void>((done) => server.close(() => done()))
  })
  const { port } = server.address() as net.AddressInfo
  return { origin: `http://127.0.0.1:${port}`, requests: () => requests, connections: () => sockets.size }
}

function newPool(options: ConstructorParameters<typeof UpstreamPool>[0] = {}): UpstreamPool {
  const pool = new UpstreamPool(options)
  onTestFinished(() => pool.close())
  return pool
}

describe('upstream pool', () => {
  it('reuses one keep-alive connection for sequential requests to an origin', async () => {
    const upstream = await httpServer((req, res) => res.end(`hello ${req.url}`))
    const pool = newPool()
    for (let i = 0; i < 5; i++) {
      const result = await send(pool, upstream.origin, { path: `/n/${i}` })
      expect(result).toMatchObject({ status: 200, body: `hello /n/${i}` })
    }
    expect(upstream.requests()).toBe(5)
    expect(upstream.connections()).toBe(1)
  })

  it('opens a connection per concurrent request and keeps them for later ones', async () => {
    const upstream = await httpServer((_req, res) => setTimeout(() => res.end('ok'), 20))
    const pool = newPool()
    await Promise.all([1, 2, 3].map((i) => send(pool, upstream.origin, { path: `/${i}` })))
    await Promise.all([1, 2, 3].map((i) => send(pool, upstream.origin, { path: `/${i}` })))
    expect(upstream.connections()).toBe(3)
  })

  it('ends a HEAD answer at its head although it declares a length, and reuses the socket', async () => {
    const upstream = await httpServer((req, res) => {
      res.writeHead(200, { 'content-length': '1000' })
      res.end(req.method === 'HEAD' ? undefined : 'x'.repeat(1000))
    })
    const pool = newPool()
    const head = await send(pool, upstream.origin, { method: 'HEAD', path: '/' })
    expect(head).toMatchObject({ status: 200, body: '' })
    expect(head.headers['content-length']).toBe('1000')
    const get = await send(pool, upstream.origin, { path: '/' })
    expect(get.body).toHaveLength(1000)
    expect(upstream.connections()).toBe(1)
  })

  it('ends a 204 with no body and keeps the connection usable', async () => {
    const upstream = await httpServer((req, res) => {
      if (req.url === '/empty') {
        res.writeHead(204)
        res.end()
      } else res.end('after')
    })
    const pool = newPool()
    expect(await send(pool, upstream.origin, { path: '/empty' })).toMatchObject({ status: 204, body: '' })
    expect(await send(pool, upstream.origin, { path: '/next' })).toMatchObject({ status: 200, body: 'after' })
    expect(upstream.connections()).toBe(1)
  })

  it('sends a body of unknown length chunked and one with content-length as is', async () => {
    const seen: Array<{ te: string | undefined; length: string | undefined; body: string }> = []
    const upstream = await httpServer(async (req, res) => {
      let body = ''
      for await (const chunk of req) body += chunk
      seen.push({ te: req.headers['transfer-encoding'], length: req.headers['content-length'], body })
      res.end('ok')
    })
    const pool = newPool()
    await send(pool, upstream.origin, { method: 'POST', path: '/chunked' }, Readable.from([Buffer.from('one,'), Buffer.from('two,'), Buffer.from('three')]))
    await send(pool, upstream.origin, { method: 'POST', path: '/sized', headers: { host: 'x', 'content-length': '5' } }, Readable.from([Buffer.from('hello')]))
    expect(seen).toEqual([
      { te: 'chunked', length: undefined, body: 'one,two,three' },
      { te: undefined, length: '5', body: 'hello' },
    ])
  })

  it('skips informational answers and delivers the final response', async () => {
    const upstream = await rawServer((socket) => {
      socket.write('HTTP/1.1 103 Early Hints\r\nlink: </a.css>\r\n\r\n')
      socket.write('HTTP/1.1 201 Created\r\ncontent-length: 4\r\nx-final: yes\r\n\r\ndone')
    })
    const result = await send(newPool(), upstream.origin, { path: '/' })
    expect(result).toMatchObject({ status: 201, body: 'done' })
    expect(result.headers['x-final']).toBe('yes')
    expect(result.headers.link).toBeUndefined()
  })

  it('ends a response delimited by the closing of the connection', async () => {
    const upstream = await rawServer((socket) => {
      socket.end('HTTP/1.1 200 OK\r\nconnection: close\r\n\r\nuntil the end')
    })
    expect(await send(newPool(), upstream.origin, { path: '/' })).toMatchObject({ status: 200, body: 'until the end' })
  })

  it('fails a response cut short of its length, and never sends the request again', async () => {
    const upstream = await rawServer((socket) => {
      socket.end('HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nhalf')
    })
    await expect(send(newPool(), upstream.origin, { method: 'POST', path: '/', headers: { host: 'x', 'content-length': '2' } }, Readable.from([Buffer.from('{}')]))).rejects.toMatchObject({ code: 'UPSTREAM_TRUNCATED' })
    expect(upstream.requests()).toBe(1)
  })

  it('reads a body of known length arriving in pieces, then parses the next response on the same socket', async () => {
    const body = 'x'.repeat(100_000)
    let served = 0
    const upstream = await rawServer((socket) => {
      served++
      // Head and the first bytes together, the rest in uneven pieces, as a busy server sends them.
      socket.write(`HTTP/1.1 200 OK\r\ncontent-length: ${body.length}\r\nx-n: ${served}\r\n\r\n${body.slice(0, 10)}`)
      let at = 10
      const more = () => {
        if (at >= body.length) return
        const next = Math.min(body.length, at + 7_001)
        socket.write(body.slice(at, next))
        at = next
        setImmediate(more)
      }
      more()
    })
    const pool = newPool()
    const first = await send(pool, upstream.origin, { path: '/a' })
    const second = await send(pool, upstream.origin, { path: '/b' })
    expect([first.body.length, first.body === body, first.headers['x-n']]).toEqual([body.length, true, '1'])
    expect([second.body === body, second.headers['x-n']]).toEqual([true, '2'])
    expect(upstream.requests()).toBe(2)
  })

  it('delivers a response followed by stray bytes, and never reuses that socket', async () => {
    const upstream = await rawServer((socket) => {
      socket.write('HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nokGARBAGE')
    })
    const pool = newPool()
    expect(await send(pool, upstream.origin, { path: '/1' })).toMatchObject({ status: 200, body: 'ok' })
    expect(await send(pool, upstream.origin, { path: '/2' })).toMatchObject({ status: 200, body: 'ok' })
    expect([upstream.requests(), upstream.connections()]).toEqual([2, 2])
  })

  it('fails when the upstream closes before answering, with no retry', async () => {
    const upstream = await rawServer((socket) => socket.destroy())
    await expect(send(newPool(), upstream.origin, { method: 'POST', path: '/ship', headers: { host: 'x', 'content-length': '0' } })).rejects.toMatchObject({ code: expect.stringMatching(/^(UPSTREAM_CLOSED|ECONNRESET)$/) })
    expect(upstream.requests()).toBe(1)
  })

  it('rejects a malformed response as a bad upstream response', async () => {
    const upstream = await rawServer((socket) => socket.write('NOT HTTP AT ALL\r\n\r\n'))
    await expect(send(newPool(), upstream.origin, { path: '/' })).rejects.toMatchObject({ code: 'UPSTREAM_BAD_RESPONSE' })
  })

  it('fails a response of more than 2000 header lines rather than hand it on without its framing lines, and keeps one of 2000', async () => {
    // Short lines: 2100 of them fit in the 16 KiB head limit, so the count is what is refused.
    const filler = (n: number) => Array.from({ length: n }, (_, i) => `${i.toString(36)}:v\r\n`).join('')
    const upstream = await rawServer((socket, request) => {
      const lines = request.includes('/many') ? 2100 : 1999
      socket.write(`HTTP/1.1 200 OK\r\n${filler(lines)}content-length: 5\r\n\r\nhello`)
    })
    const pool = newPool()
    await expect(send(pool, upstream.origin, { path: '/many' })).rejects.toMatchObject({ code: 'UPSTREAM_BAD_RESPONSE', message: "The upstream's response head has more than 2000 header lines" })
    const most = await send(pool, upstream.origin, { path: '/most' })
    expect(most.body).toBe('hello')
    expect(Object.keys(most.headers)).toHaveLength(2000)
  })

  it('fails a request whose head does not arrive in time', async () => {
    const upstream = await rawServer(() => undefined)
    await expect(send(newPool({ headersTimeoutMs: 100, bodyTimeoutMs: 100 }), upstream.origin, { path: '/' })).rejects.toMatchObject({ code: 'UND_ERR_HEADERS_TIMEOUT' })
  })

  it('does not reuse a socket the server announced it would close within a second', async () => {
    const upstream = await httpServer((_req, res) => {
      res.setHeader('keep-alive', 'timeout=1')
      res.end('short')
    })
    const pool = newPool()
    await send(pool, upstream.origin, { path: '/' })
    await send(pool, upstream.origin, { path: '/' })
    expect(upstream.connections()).toBe(2)
  })

  it('reads the keep-alive timeout hint', () => {
    expect(keepAliveHintMs('timeout=5')).toBe(5000)
    expect(keepAliveHintMs('max=100, timeout=2')).toBe(2000)
    expect(keepAliveHintMs(undefined)).toBeNull()
    expect(keepAliveHintMs('max=100')).toBeNull()
  })

  it('pauses the socket when the handler asks and delivers the rest after resume', async () => {
    const upstream = await httpServer((_req, res) => {
      res.write('a'.repeat(64 * 1024))
      setTimeout(() => res.end('b'.repeat(64 * 1024)), 20)
    })
    const pool = newPool()
    let received = 0
    let pausedAt = -1
    let receivedAtResume = -1
    const done = new Promise<void>((resolve, reject) => {
      const call = pool.request(upstream.origin, { method: 'GET', path: '/', headers: { host: 'x' } }, null, {
        onHead() {},
        onData(chunk) {
          received += chunk.length
          if (pausedAt === -1) {
            pausedAt = received
            setTimeout(() => {
              receivedAtResume = received
              call.resume()
            }, 80)
            return false
          }
        },
        onEnd: () => resolve(),
        onError: reject,
      })
    })
    await done
    expect(pausedAt).toBeGreaterThan(0)
    // Nothing more arrived while paused, although the upstream had sent more by then.
    expect(receivedAtResume).toBe(pausedAt)
    expect(received).toBe(128 * 1024)
  })

  it('hands a handler that does not borrow chunks of its own, untouched by later reads on the same socket', async () => {
    const upstream = await httpServer((req, res) => res.end(Buffer.alloc(1000, req.url === '/a' ? 'a' : 'b')))
    const pool = new UpstreamPool()
    onTestFinished(() => pool.close())
    const kept: Buffer[] = []
    await new Promise<void>((resolve, reject) => {
      pool.request(upstream.origin, { method: 'GET', path: '/a', headers: { host: 'x' } }, null, {
        onHead: () => undefined,
        onData: (chunk) => void kept.push(chunk),
        onEnd: resolve,
        onError: reject,
      })
    })
    expect((await send(pool, upstream.origin, { path: '/b' })).body).toBe('b'.repeat(1000))
    expect(upstream.connections()).toBe(1)
    expect(Buffer.concat(kept).toString()).toBe('a'.repeat(1000))
  })

  it('reads nothing more into lent bytes a borrowing handler still holds, and reuses the socket once they are released', async () => {
    const upstream = await httpServer((req, res) => res.end(Buffer.alloc(1000, (req.url ?? '/x').slice(1))))
    const pool = new UpstreamPool()
    onTestFinished(() => pool.close())
    const lent: Buffer[] = []
    let afterReads = 0
    const call = await new Promise<UpstreamCall>((resolve, reject) => {
      const started: UpstreamCall = pool.request(upstream.origin, { method: 'GET', path: '/a', headers: { host: 'x' } }, null, {
        borrows: true,
        // Still "writing" the lent bytes when the read ends: the connection must wait for release().
        afterRead: () => (++afterReads, true),
        onHead: () => undefined,
        onData: (chunk) => void lent.push(chunk),
        onEnd: () => resolve(started),
        onError: reject,
      })
    })
    expect(afterReads).toBe(1)
    // While the bytes are held, another request gets a connection of its own.
    expect((await send(pool, upstream.origin, { path: '/b' })).body).toBe('b'.repeat(1000))
    expect(upstream.connections()).toBe(2)
    expect(Buffer.concat(lent).toString()).toBe('a'.repeat(1000))
    call.release()
    // Both connections are idle again: two concurrent requests open no third one.
    const [c, d] = await Promise.all([send(pool, upstream.origin, { path: '/c' }), send(pool, upstream.origin, { path: '/d' })])
    expect([c.body, d.body]).toEqual(['c'.repeat(1000), 'd'.repeat(1000)])
    expect(upstream.connections()).toBe(2)
  })

  it('ignores a late release from an exchange that no longer holds the connection', async () => {
    const upstream = await httpServer((req, res) => res.end(Buffer.alloc(1000, (req.url ?? '/x').slice(1))))
    const pool = new UpstreamPool()
    onTestFinished(() => pool.close())
    const pinned = (path: string, lent: Buffer[]) =>
      new Promise<UpstreamCall>((resolve, reject) => {
        const started: UpstreamCall = pool.request(upstream.origin, { method: 'GET', path, headers: { host: 'x' } }, null, {
          borrows: true,
          afterRead: () => true,
          onHead: () => undefined,
          onData: (chunk) => void lent.push(chunk),
          onEnd: () => resolve(started),
          onError: reject,
        })
      })
    const first = await pinned('/a', [])
    first.release()
    const held: Buffer[] = []
    await pinned('/b', held)
    expect(upstream.connections()).toBe(1)
    // The first exchange releases again: the connection is the second one's, and stays pinned.
    first.release()
    expect((await send(pool, upstream.origin, { path: '/c' })).body).toBe('c'.repeat(1000))
    expect(upstream.connections()).toBe(2)
    expect(Buffer.concat(held).toString()).toBe('b'.repeat(1000))
  })

  it('keeps a pinned connection out of the pool when the request body ends after the response', async () => {
    // Answers each request as soon as its head arrives, with one letter: the path's.
    const upstream = await rawServer((socket, request) => {
      const letter = /(?:GET|POST) \/(\w)/.exec(request)?.[1] ?? 'x'
      socket.write(`HTTP/1.1 200 OK\r\ncontent-length: 1000\r\n\r\n${letter.repeat(1000)}`)
    })
    const pool = new UpstreamPool()
    onTestFinished(() => pool.close())
    const body = new Readable({ read() {} })
    body.push('ab')
    const lent: Buffer[] = []
    await new Promise<void>((resolve, reject) => {
      pool.request(upstream.origin, { method: 'POST', path: '/a', headers: { host: 'x', 'content-length': '3' } }, body, {
        borrows: true,
        afterRead: () => true,
        onHead: () => undefined,
        onData: (chunk) => void lent.push(chunk),
        onEnd: resolve,
        onError: reject,
      })
    })
    // The request body ends while the response's lent bytes are still held.
    body.push('c')
    body.push(null)
    await new Promise((resolve) => setTimeout(resolve, 20))
    expect((await send(pool, upstream.origin, { path: '/b' })).body).toBe('b'.repeat(1000))
    expect(upstream.connections()).toBe(2)
    expect(Buffer.concat(lent).toString()).toBe('a'.repeat(1000))
  })

  it('fails requests in flight when closed, and refuses new ones', async () => {
    const upstream = await rawServer(() => undefined)
    const pool = new UpstreamPool()
    const pending = send(pool, upstream.origin, { path: '/' })
    await expect.poll(() => upstream.requests(), { timeout: 5000, interval: 5 }).toBe(1)
    await pool.close()
    await expect(pending).rejects.toMatchObject({ code: 'UND_ERR_DESTROYED' })
    await expect(send(pool, upstream.origin, { path: '/' })).rejects.toMatchObject({ code: 'UND_ERR_DESTROYED' })
  })
})
