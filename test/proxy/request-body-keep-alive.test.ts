/**
 * A request body never stalls the requests after it on a kept-alive connection. A body of 16 KiB or
 * more (the buffer of its stream) that arrived in full before anyone read it used to pause the
 * client socket for good: read after its end, a stream asks for no more, so nothing resumed the
 * socket, the next request on the connection sat unread, and the idle sweep closed the connection
 * under it (undici: "other side closed"; one keep-alive POST in three of 17,000 bytes through
 * `toolstorm proxy`). Pinned on the wire server with raw bytes and real clients (Content-Length,
 * chunked, Expect: 100-continue, pipelined), and through the proxy around the boundary, on the fast
 * path and on observed ones.
 */
import { createHash } from 'node:crypto'
import { once } from 'node:events'
import http from 'node:http'
import net, { type AddressInfo } from 'node:net'
import { Readable } from 'node:stream'
import { Agent, ProxyAgent, request, type Dispatcher } from 'undici'
import { describe, expect, it, onTestFinished } from 'vitest'
import { createCassetteRecorder } from '../../src/cassette/record/cassette-recorder.js'
import { createStorm } from '../../src/create-storm.js'
import { defaultPlugins } from '../../src/default-plugins.js'
import type { StormConfigInput } from '../../src/engine/schema/config.js'
import { WireServer } from '../../src/proxy/http1/wire-server.js'
import type { WireRequest } from '../../src/proxy/http1/wire-request.js'
import type { WireResponse } from '../../src/proxy/http1/wire-response.js'
import { startProxy } from '../../src/proxy/proxy-server.js'
import { passThroughCounter } from '../helpers/pass-through-counter.js'
import { closing, closingServer } from '../helpers/teardown.js'
import { PROXY_TRANSPORTS, type ProxyTransport } from '../helpers/transports.js'

/** Around the body stream's 16 KiB buffer, and a body larger than a socket read. */
const SIZES = [15_000, 16_383, 16_384, 16_385, 17_000, 64 * 1024]
const ROUNDS = 16
const MIB = 1024 * 1024

const digest = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex')

/** Body `id` of `size` bytes, different for every request (a body arriving for another would show). */
function body(id: number, size: number): Buffer {
  const bytes = Buffer.allocUnsafe(size)
  for (let i = 0; i < size; i++) bytes[i] = Math.imul(i ^ Math.imul(id, 0x9e3779b9), 0x85ebca6b) >>> 24
  return bytes
}

/**
 * A wire server whose handler reads each request body only once it has arrived in full (as an
 * exchange that waits on a fault or a state store does), then answers its length. A kept-alive
 * connection is swept after 1 s idle (2 s with the grace): a stalled one fails fast.
 */
async function lateReader(keepAliveTimeoutMs = 1_000): Promise<number> {
  const server = new WireServer({ keepAliveTimeoutMs })
  server.on('request', (req: WireRequest, res: WireResponse) => {
    const answer = (length: number) => res.writeHead(200, { 'content-length': String(length).length }).end(String(length))
    if (!req.body) return answer(0)
    const body = req.body
    let waited = 0
    const read = () => {
      // Bounded: a body the socket's pause held back is read anyway (then it resumes the socket).
      if (!req.complete && waited++ < 200) return void setTimeout(read, 2)
      let length = 0
      body.on('data', (chunk: Buffer) => (length += chunk.length))
      body.on('end', () => answer(length))
    }
    read()
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  onTestFinished(() => {
    server.closeAllConnections()
    return new Promise<void>((resolve) => server.close(() => resolve()))
  })
  return server.address()!.port
}

/** A raw connection: `send` writes bytes, `answers(n)` waits for n responses (or the close) and returns all text so far. */
async function rawConnection(port: number) {
  const socket = net.connect(port, '127.0.0.1')
  onTestFinished(() => void socket.destroy())
  await once(socket, 'connect')
  let text = ''
  let closed = false
  const waiters: Array<() => void> = []
  const wake = () => waiters.splice(0).forEach((waiter) => waiter())
  socket.on('data', (chunk: Buffer) => {
    text += chunk.toString('latin1')
    wake()
  })
  socket.on('close', () => {
    closed = true
    wake()
  })
  socket.on('error', () => undefined)
  const count = () => (text.match(/HTTP\/1\.1 200 OK/g) ?? []).length
  return {
    send: (bytes: Buffer | string) => socket.write(bytes),
    async answers(n: number): Promise<{ count: number; closed: boolean; text: string }> {
      while (count() < n && !closed) await new Promise<void>((resolve) => waiters.push(resolve))
      return { count: count(), closed, text }
    },
  }
}

const post = (size: number, extra = '') => Buffer.concat([Buffer.from(`POST /up HTTP/1.1\r\nHost: x\r\ncontent-length: ${size}\r\n${extra}\r\n`), body(size, size)])
function chunkedPost(size: number): Buffer {
  const bytes = body(size, size)
  // Two chunks, so the body crosses 16 KiB in the second.
  const half = Math.floor(size / 2)
  const chunk = (part: Buffer) => Buffer.concat([Buffer.from(`${part.length.toString(16)}\r\n`), part, Buffer.from('\r\n')])
  return Buffer.concat([Buffer.from('POST /up HTTP/1.1\r\nHost: x\r\ntransfer-encoding: chunked\r\n\r\n'), chunk(bytes.subarray(0, half)), chunk(bytes.subarray(half)), Buffer.from('0\r\n\r\n')])
}

describe('the wire server reads the next request after a body read only once it had arrived in full', () => {
  for (const [framing, make] of [
    ['Content-Length', (size: number) => post(size)],
    ['chunked', chunkedPost],
  ] as const) {
    it(`with a ${framing} body of 16 KiB and more`, async () => {
      const port = await lateReader()
      for (const size of [16_383, 16_384, 17_000, 64 * 1024]) {
        const connection = await rawConnection(port)
        connection.send(make(size))
        const first = await connection.answers(1)
        expect(first.text).toMatch(new RegExp(`\\r\\n\\r\\n${size}$`))
        connection.send('GET /next HTTP/1.1\r\nHost: x\r\n\r\n')
        const second = await connection.answers(2)
        expect({ size, answered: second.count, closed: second.closed }).toEqual({ size, answered: 2, closed: false })
      }
    })
  }

  it('with three such requests pipelined in one write, and a fourth after them', async () => {
    const port = await lateReader()
    const connection = await rawConnection(port)
    connection.send(Buffer.concat([post(17_000), post(20_000), chunkedPost(30_000)]))
    expect((await connection.answers(3)).text.match(/\r\n\r\n\d+/g)).toEqual(['\r\n\r\n17000', '\r\n\r\n20000', '\r\n\r\n30000'])
    connection.send(post(17_000))
    const after = await connection.answers(4)
    expect({ answered: after.count, closed: after.closed }).toEqual({ answered: 4, closed: false })
  })

  it('with Expect: 100-continue from a keep-alive node:http client', async () => {
    // node:http's agent drops a socket whose server announces keep-alive: timeout=1 (it keeps a second's margin).
    const port = await lateReader(5_000)
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
    onTestFinished(() => agent.destroy())
    const sockets = new Set<net.Socket>()
    const send = (size: number) =>
      new Promise<string>((resolve, reject) => {
        const req = http.request({ host: '127.0.0.1', port, method: 'POST', path: '/up', agent, headers: { expect: '100-continue', 'content-length': size } }, (res) => {
          let text = ''
          res.on('data', (chunk: Buffer) => (text += chunk))
          res.on('end', () => resolve(text))
        })
        req.on('socket', (socket) => sockets.add(socket))
        req.on('continue', () => req.end(body(size, size)))
        req.on('error', reject)
      })
    for (const size of [17_000, 17_000, 64 * 1024, 15_000]) expect(await send(size)).toBe(String(size))
    // All on one connection: none was closed under a request and replaced.
    expect(sockets.size).toBe(1)
  })
})

/** An upstream that answers each POST with the length and digest of the body it received. */
async function digestUpstream(): Promise<string> {
  const server = http.createServer((req, res) => {
    const hash = createHash('sha256')
    let length = 0
    req.on('data', (chunk: Buffer) => {
      hash.update(chunk)
      length += chunk.length
    })
    req.on('end', () => {
      const text = JSON.stringify({ length, digest: hash.digest('hex') })
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) })
      res.end(text)
    })
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  closingServer(server)
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

interface PathCase {
  readonly name: string
  readonly config: StormConfigInput
  readonly recorded: boolean
  /** Whether the exchanges take the pass-through fast path. */
  readonly fastPath: boolean
}

const PATHS: readonly PathCase[] = [
  { name: 'the fast path', config: {}, recorded: false, fastPath: true },
  { name: 'a rule on the route that never fires', config: { rules: [{ name: 'never', route: 'POST /upload', kind: 'response_lost', calls: [1_000_000] }] }, recorded: false, fastPath: true },
  { name: 'a recorder observing', config: {}, recorded: true, fastPath: false },
  // The fault runs before the body is read: the body has arrived in full by then.
  { name: 'a latency fault before the upstream, recorded', config: { rules: [{ name: 'slow', route: 'POST /upload', kind: 'latency', delay: 0.003 }] }, recorded: true, fastPath: false },
]

/** A proxy in `mode` in front of an upstream, for one path; the client keeps one connection to it. */
async function proxiedUploads(mode: ProxyTransport, path: PathCase) {
  const upstream = await digestUpstream()
  const storm = createStorm(path.config)
  const recorder = path.recorded ? createCassetteRecorder(storm, { source: 'proxy', urlForm: mode === 'reverse' ? 'origin' : 'absolute' }) : null
  const counter = passThroughCounter()
  const proxy = closing(await startProxy({ ...(mode === 'reverse' ? { targets: [upstream] } : {}), storm, plugins: [...defaultPlugins(), counter.plugin], ...(recorder ? { observer: recorder.observer } : {}) }))
  const dispatcher: Dispatcher = closing(mode === 'forward' ? new ProxyAgent({ uri: proxy.url, proxyTunnel: false, connections: 1 }) : new Agent({ connections: 1 }))
  const url = `${mode === 'reverse' ? proxy.url : upstream}/upload`
  return { proxy, storm, recorder, taken: counter.taken, dispatcher, url }
}

/**
 * POST each body in turn; stops at the first failure (on a stalled connection it comes after the
 * proxy's idle sweep, 6 s) and returns what went wrong, or null.
 */
async function upload(dispatcher: Dispatcher, url: string, plan: ReadonlyArray<readonly [size: number, rounds: number]>, chunked = false): Promise<{ sent: number; failure: string | null }> {
  let sent = 0
  for (const [size, rounds] of plan) {
    for (let round = 0; round < rounds; round++) {
      const bytes = body(sent, size)
      // A stream of unknown length: undici sends it chunked.
      const payload = chunked ? Readable.from([bytes.subarray(0, 8_000), bytes.subarray(8_000)]) : bytes
      try {
        const response = await request(url, { method: 'POST', dispatcher, body: payload, headers: { 'content-type': 'application/octet-stream' } })
        const answer = (await response.body.json()) as { length: number; digest: string }
        sent++
        if (response.statusCode !== 200 || answer.length !== size || answer.digest !== digest(bytes)) return { sent, failure: `${size} B, round ${round}: ${response.statusCode} ${JSON.stringify(answer)}` }
      } catch (error) {
        return { sent, failure: `${size} B, round ${round}: ${(error as NodeJS.ErrnoException).code} ${(error as Error).message}` }
      }
    }
  }
  return { sent, failure: null }
}

for (const mode of PROXY_TRANSPORTS) {
  describe(`keep-alive POSTs through the proxy (${mode} mode) all arrive, whatever their size`, () => {
    for (const path of PATHS) {
      it(`on ${path.name}`, async () => {
        const { storm, recorder, taken, dispatcher, url } = await proxiedUploads(mode, path)
        const plan = [...SIZES.map((size) => [size, ROUNDS] as const), [MIB, 2] as const]
        const total = SIZES.length * ROUNDS + 2
        expect(await upload(dispatcher, url, plan)).toEqual({ sent: total, failure: null })
        // The path under test was the one taken.
        expect(taken.get('POST /upload') ?? 0).toBe(path.fastPath ? total : 0)
        // Every upload is in the report, whichever path it took.
        expect(storm.report().calls.filter((call) => call.route === 'POST /upload')).toHaveLength(total)
        const coverage = storm.report().coverage
        // Its ordinal never comes: never eligible (eligibility counts the calls a rule's ordinals name).
        if (path.config.rules?.[0]?.name === 'never') expect(coverage.never).toEqual({ eligible: 0, selected: 0, triggered: 0 })
        if (path.config.rules?.[0]?.name === 'slow') expect(coverage.slow).toMatchObject({ eligible: total, triggered: total })
        if (recorder) {
          await recorder.close()
          expect((await recorder.cassette()).exchanges).toHaveLength(total)
        }
      })
    }

    it('with chunked request bodies, on the fast path and recorded', async () => {
      for (const path of [PATHS[0]!, PATHS[2]!]) {
        const { dispatcher, url, taken } = await proxiedUploads(mode, path)
        expect(await upload(dispatcher, url, [[16_384, ROUNDS], [17_000, ROUNDS], [64 * 1024, 4]], true)).toEqual({ sent: 2 * ROUNDS + 4, failure: null })
        expect(taken.get('POST /upload') ?? 0).toBe(path.fastPath ? 2 * ROUNDS + 4 : 0)
      }
    })
  })
}
