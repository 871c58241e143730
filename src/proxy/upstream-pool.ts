/**
 * The proxy's HTTP/1.1 client for upstreams: keep-alive sockets per origin, responses parsed by
 * Node's own native llhttp binding, bodies handed over as the socket delivers them.
 *
 * @note Hand-written instead of undici on purpose. undici parses with llhttp compiled to WASM,
 * copying every socket read into WASM memory and through JS callbacks; on the proxy's relay path
 * that made a 64 KiB response cost about twice what the native parser does (bench/: `npm run
 * bench proxy`), and a 64 B one ~15 % more. The proxy needs no more than plain request/response
 * forwarding here: no redirects, retries, pipelining or caching (and it must never retry: a
 * request is sent upstream at most once). undici stays for everything else.
 */
import net from 'node:net'
import type { Readable } from 'node:stream'
import tls from 'node:tls'
import { printExchangeFailure, reportFailure, type ExchangeErrorReporter } from './exchange-failure.js'
import { headerObject } from './http1/headers.js'
import { freeParser, HTTPParser, MAX_HEADER_PAIRS, type NativeParser } from './http1/native-parser.js'

/** What the caller learns about one upstream response. */
export interface UpstreamHandler {
  /** The final response head (informational 1xx answers are skipped). Header names lowercase. */
  onHead(status: number, headers: Record<string, string | string[]>): void
  /** A body chunk. Return false to pause the socket until `resume()`. */
  onData(chunk: Buffer): boolean | void
  onEnd(): void
  /** The request failed (before or after the head). */
  onError(error: NodeJS.ErrnoException): void
  /**
   * Accept lent chunks: body bytes handed over in the socket's own read buffer, which the next
   * read overwrites. A lent chunk is valid until `afterRead()` returns, or, when it returns true,
   * until the handler calls `release()` on its call. Without this, every chunk is the handler's.
   */
  readonly borrows?: boolean
  /**
   * The chunks of one socket read were delivered (called only after a lent one): write or copy
   * any lent chunk kept, and return true while lent bytes are still on their way out (a socket
   * write that did not complete at once); the connection then reads nothing until `release()`.
   */
  afterRead?(): boolean
}

export interface UpstreamRequestHead {
  readonly method: string
  /** Origin-form: `/path?query`. */
  readonly path: string
  /** Lowercase names; `host` included. Values were validated by the server that parsed them. */
  readonly headers: Record<string, string | string[]>
}

/** Controls one request in flight. */
export interface UpstreamCall {
  abort(reason?: Error): void
  pause(): void
  resume(): void
  /** The lent bytes `afterRead()` said were still in use are no longer needed. */
  release(): void
}

export interface UpstreamPoolOptions {
  /** Close an idle socket after this long; below Node's default server keep-alive (5 s) so a reused socket is not closed under us. */
  keepAliveMs?: number
  /** No response head within this long fails the request. */
  headersTimeoutMs?: number
  /** No body bytes for this long fails the request. */
  bodyTimeoutMs?: number
  /** TLS options for https origins (verification settings, extra CAs). */
  tls?: tls.ConnectionOptions
  /**
   * A handler threw in this pool's socket callbacks: its call failed (with `ERR_EXCHANGE_FAILED`)
   * and its connection was discarded, the pool goes on. Default: one line on stderr.
   */
  onHandlerError?: ExchangeErrorReporter
}

const CRLF = '\r\n'
/**
 * Each plain-TCP upstream socket reads into one buffer of its own, reused read after read.
 * Node would otherwise allocate a fresh 64 KiB buffer for every read; at proxy rates that churn
 * (hundreds of MB/s of external memory for 64 KiB responses) forced a young-generation GC every
 * few hundred requests, and page faults on the fresh memory. 96 KiB holds a 64 KiB response and
 * its head in one read, and the copies handed to handlers that do not borrow stay below glibc's
 * mmap threshold (128 KiB): with a 128 KiB buffer, those copies made the fault path's 1 MiB
 * responses cost 1.7-2.3x the CPU. Measured: `npm run bench -- proxy`, docs/benchmarks.md step 6.
 */
const READ_BUFFER_BYTES = 96 * 1024
const MAX_HEAD_BYTES = 16 * 1024
const MAX_IDLE_PER_ORIGIN = 256
/** Stop reusing a socket this long before the server said it would close it (undici uses 2 s). */
const KEEP_ALIVE_MARGIN_MS = 1_000

function codedError(code: string, message: string): NodeJS.ErrnoException {
  return Object.assign(new Error(message), { code })
}

/** One socket to an origin: carries one call at a time, then waits idle in the pool to be reused. */
class UpstreamConnection {
  readonly origin: string
  readonly socket: net.Socket
  readonly parser: NativeParser
  /** The request in flight, if any. */
  call: Call | null = null
  reused = false
  /** The last response allowed the connection to be kept. */
  keepAlive = false
  /** Bytes still to come of a body read by the pool itself (see #readBody); 0 otherwise. */
  bodyRemaining = 0
  /** When it went idle (performance.now() ms), or -1 while in use. */
  idleSince = -1
  /** How long it may stay idle: the pool's bound, shortened by the server's `Keep-Alive: timeout=` hint. */
  keepAliveMs: number
  closed = false
  /** The call whose borrowing handler is still writing bytes of the read buffer: nothing is read until it releases them. */
  pinnedBy: Call | null = null

  constructor(origin: string, socket: net.Socket, keepAliveMs: number) {
    this.origin = origin
    this.keepAliveMs = keepAliveMs
    this.socket = socket
    this.parser = new HTTPParser()
    this.parser.initialize(HTTPParser.RESPONSE, {}, MAX_HEAD_BYTES, 0)
  }
}

class Call implements UpstreamCall {
  readonly handler: UpstreamHandler
  readonly head: UpstreamRequestHead
  readonly body: Readable | null
  connection: UpstreamConnection | null = null
  headers: string[] = []
  status = 0
  informational = false
  done = false
  /** The request body was written in full (or there was none). */
  bodySent = false
  responseStarted = false
  paused = false
  aborted = false
  /** A lent chunk went to the handler during the current read. */
  lentOut = false
  readonly pool: UpstreamPool

  constructor(pool: UpstreamPool, head: UpstreamRequestHead, body: Readable | null, handler: UpstreamHandler) {
    this.pool = pool
    this.head = head
    this.body = body
    this.handler = handler
  }

  abort(reason: Error = codedError('UND_ERR_ABORTED', 'Request aborted')): void {
    if (this.done) return
    this.aborted = true
    const connection = this.connection
    this.fail(Object.assign(reason, { code: (reason as NodeJS.ErrnoException).code ?? 'UND_ERR_ABORTED' }))
    if (connection) this.pool.discard(connection)
  }

  pause(): void {
    if (this.paused || this.done) return
    this.paused = true
    this.connection?.socket.pause()
  }

  resume(): void {
    if (!this.paused) return
    this.paused = false
    if (this.connection && this.connection.pinnedBy === null) this.connection.socket.resume()
  }

  release(): void {
    this.pool.unpin(this)
  }

  fail(error: NodeJS.ErrnoException): void {
    if (this.done) return
    this.done = true
    this.body?.unpipe?.()
    try {
      this.handler.onError(error)
    } catch (thrown) {
      // Failures arrive from socket, timer and stream events: a throw here would be uncaught.
      this.pool.handlerThrew(this.connection, this, thrown)
    }
  }
}

export class UpstreamPool {
  readonly #options: Required<Omit<UpstreamPoolOptions, 'tls'>> & { tls: tls.ConnectionOptions | undefined }
  readonly #idle = new Map<string, UpstreamConnection[]>()
  readonly #all = new Set<UpstreamConnection>()
  #closed = false
  #sweeper: NodeJS.Timeout | null = null

  constructor(options: UpstreamPoolOptions = {}) {
    this.#options = {
      keepAliveMs: options.keepAliveMs ?? 4_000,
      headersTimeoutMs: options.headersTimeoutMs ?? 300_000,
      bodyTimeoutMs: options.bodyTimeoutMs ?? 300_000,
      tls: options.tls,
      onHandlerError: options.onHandlerError ?? printExchangeFailure,
    }
  }

  /** Send one request upstream. The handler hears about the head, the body and the end (or an error), exactly once each. */
  request(origin: string, head: UpstreamRequestHead, body: Readable | null, handler: UpstreamHandler): UpstreamCall {
    const call = new Call(this, head, body, handler)
    if (this.#closed) {
      call.fail(codedError('UND_ERR_DESTROYED', 'The upstream pool is closed'))
      return call
    }
    let connection: UpstreamConnection | undefined
    const idle = this.#idle.get(origin)
    while (idle && idle.length) {
      const candidate = idle.pop() as UpstreamConnection
      const fresh = performance.now() - candidate.idleSince < candidate.keepAliveMs
      candidate.idleSince = -1
      if (fresh && !candidate.closed && !candidate.socket.destroyed && candidate.socket.readyState === 'open') {
        connection = candidate
        connection.reused = true
        break
      }
    }
    connection ??= this.#connect(origin)
    this.#start(connection, call)
    return call
  }

  #connect(origin: string): UpstreamConnection {
    const url = new URL(origin)
    const secure = url.protocol === 'https:'
    const port = Number(url.port || (secure ? 443 : 80))
    const host = url.hostname.replace(/^\[|\]$/g, '')
    // TLS sockets hand over the decrypted bytes in buffers of their own: no lending there.
    const readBuffer = secure ? null : Buffer.allocUnsafe(READ_BUFFER_BYTES)
    const socket: net.Socket = readBuffer
      ? net.connect({ host, port, onread: { buffer: readBuffer, callback: (bytes: number) => this.#onLentRead(connection, readBuffer, bytes) } })
      : tls.connect({ ...this.#options.tls, host, port, ...(net.isIP(host) ? {} : { servername: host }), ALPNProtocols: ['http/1.1'] })
    socket.setNoDelay(true)
    // One inactivity bound per socket, for the head and the body alike: re-arming timers on every
    // request costs more than the rest of the pool's work. Idle sockets are closed by the sweep.
    socket.setTimeout(Math.max(this.#options.headersTimeoutMs, this.#options.bodyTimeoutMs))
    const connection: UpstreamConnection = new UpstreamConnection(origin, socket, this.#options.keepAliveMs)
    this.#all.add(connection)
    const parser = connection.parser
    parser[HTTPParser.kOnHeaders] = (headers: string[]) => {
      connection.call?.headers.push(...headers)
    }
    parser[HTTPParser.kOnHeadersComplete] = (_major: number, _minor: number, headers: string[] | undefined, _method: unknown, _url: unknown, statusCode: number, _message: unknown, _upgrade: unknown, shouldKeepAlive: boolean) => {
      const call = connection.call
      if (!call || call.done) return 1
      const raw = headers ?? call.headers
      call.headers = []
      // Relayed, the lines past a client's limit (node:http's is 2000) would be dropped, the framing
      // ones with them: the exchange fails (502) rather than reach a client mis-framed.
      if (raw.length > MAX_HEADER_PAIRS * 2) {
        call.fail(codedError('UPSTREAM_BAD_RESPONSE', `The upstream's response head has more than ${MAX_HEADER_PAIRS} header lines`))
        this.discard(connection)
        return 1
      }
      // 1xx answers (100 Continue, 103 Early Hints) are not the response; llhttp reports the final one next.
      if (statusCode < 200 && statusCode !== 101) {
        call.informational = true
        return 1
      }
      call.informational = false
      connection.keepAlive = shouldKeepAlive
      call.status = statusCode
      call.responseStarted = true
      const headerMap = headerObject(raw, 'response')
      const hint = keepAliveHintMs(headerMap['keep-alive'])
      // Reusing a socket the server is about to close would fail a request the proxy may not retry.
      if (hint !== null) connection.keepAliveMs = Math.min(this.#options.keepAliveMs, hint - KEEP_ALIVE_MARGIN_MS)
      if (connection.keepAliveMs <= 0) connection.keepAlive = false
      call.handler.onHead(statusCode, headerMap)
      // HEAD answers and 204/304 carry no body whatever their headers say.
      if (call.head.method === 'HEAD' || statusCode === 204 || statusCode === 304) return 1
      const length = headerMap['content-length']
      if (statusCode !== 101 && headerMap['transfer-encoding'] === undefined && typeof length === 'string' && length !== '0' && /^\d+$/.test(length)) {
        // A body of known length is read straight off the socket (#readBody): llhttp would copy
        // every body chunk into a new buffer. 2 stops parsing after the head, as for an upgrade.
        connection.bodyRemaining = Number(length)
        return 2
      }
      return 0
    }
    parser[HTTPParser.kOnBody] = (chunk: Buffer) => {
      const call = connection.call
      if (!call || call.done) return
      if (call.handler.onData(chunk) === false) call.pause()
    }
    parser[HTTPParser.kOnMessageComplete] = () => {
      const call = connection.call
      // The head of a body read by #readBody: the message is not complete yet.
      if (!call || call.done || connection.bodyRemaining > 0) return
      if (call.informational) {
        call.informational = false
        return
      }
      call.done = true
      connection.call = null
      call.handler.onEnd()
      this.#release(connection, call)
    }
    if (secure) socket.on('data', (data: Buffer) => this.#onRead(connection, data, false))
    const onClose = (error?: NodeJS.ErrnoException) => {
      const call = connection.call
      if (call && !call.done) {
        try {
          // A response delimited by the end of the connection ends here.
          if (call.responseStarted && !error) {
            const result = parser.finish()
            if (!(result instanceof Error) && call.done) return this.#forget(connection)
          }
          const code = error?.code ?? (call.responseStarted ? 'UPSTREAM_TRUNCATED' : connection.reused ? 'ECONNRESET' : 'UPSTREAM_CLOSED')
          call.fail(error ?? codedError(code, call.responseStarted ? 'The upstream closed the connection mid-response' : 'The upstream closed the connection before answering'))
        } catch (thrown) {
          this.handlerThrew(connection, call, thrown)
        }
      }
      this.#forget(connection)
    }
    socket.on('error', (error: NodeJS.ErrnoException) => onClose(error))
    socket.on('close', () => onClose())
    socket.on('end', () => onClose())
    socket.on('timeout', () => {
      const call = connection.call
      this.discard(connection)
      call?.fail(codedError(call.responseStarted ? 'UND_ERR_BODY_TIMEOUT' : 'UND_ERR_HEADERS_TIMEOUT', 'The upstream did not answer in time'))
    })
    return connection
  }

  /**
   * `onread` callback of a plain-TCP socket: `bytes` bytes sit in its read buffer. Always true:
   * pausing goes through socket.pause(), as returning false would stop reading behind the
   * socket's back and resume() would not start it again.
   */
  #onLentRead(connection: UpstreamConnection, buffer: Buffer, bytes: number): boolean {
    this.#onRead(connection, buffer.subarray(0, bytes), true)
    return true
  }

  /** One socket read, guarded: a handler that throws fails its call, not the process. */
  #onRead(connection: UpstreamConnection, data: Buffer, lent: boolean): void {
    const call = connection.call
    try {
      this.#read(connection, data, lent)
    } catch (error) {
      this.handlerThrew(connection, call, error)
    }
  }

  /** @internal Last resort (see exchange-failure.ts): report once, drop the connection, fail the call if it is still open. */
  handlerThrew(connection: UpstreamConnection | null, call: Call | null, error: unknown): void {
    const origin = connection?.origin ?? 'the upstream'
    reportFailure(this.#options.onHandlerError, error, call ? `"${call.head.method} ${call.head.path}" at ${origin}` : `a response from ${origin}`)
    if (connection) this.discard(connection)
    // A handler that throws again on this failure is caught in fail() and not reported twice.
    call?.fail(Object.assign(new Error('The exchange failed in a handler', { cause: error }), { code: 'ERR_EXCHANGE_FAILED' }))
  }

  /** One socket read. `lent`: `data` is a view of the connection's read buffer, overwritten by the next read. */
  #read(connection: UpstreamConnection, data: Buffer, lent: boolean): void {
    const call = connection.call
    if (!call) {
      // Bytes on an idle connection: the server broke the protocol; never reuse it.
      this.discard(connection)
      return
    }
    if (connection.bodyRemaining > 0) this.#readBody(connection, data, lent)
    else {
      const result = connection.parser.execute(data)
      if (result instanceof Error) {
        this.discard(connection)
        call.fail(Object.assign(result, { code: 'UPSTREAM_BAD_RESPONSE' }))
        return
      }
      if (connection.bodyRemaining > 0 && result < data.length) this.#readBody(connection, data.subarray(result), lent)
    }
    if (!call.lentOut) return
    call.lentOut = false
    if (connection.closed) return // no more reads: the lent bytes stay as they are
    if (call.handler.afterRead?.() === true) {
      connection.pinnedBy = call
      connection.socket.pause()
      return
    }
    // The response ended in this read (the connection is still open, so not by a failure).
    if (call.done) this.#release(connection, call)
  }

  /** Bytes of a body of known length, handed over as they arrived (no copy); at its end the parser starts afresh. */
  #readBody(connection: UpstreamConnection, data: Buffer, lent: boolean): void {
    const call = connection.call
    if (!call || call.done) return this.discard(connection)
    const take = Math.min(data.length, connection.bodyRemaining)
    connection.bodyRemaining -= take
    const last = connection.bodyRemaining === 0
    let chunk = take === data.length ? data : data.subarray(0, take)
    if (lent) {
      if (call.handler.borrows) call.lentOut = true
      else chunk = Buffer.from(chunk)
    }
    if (call.handler.onData(chunk) === false && !last) call.pause()
    if (!last) return
    connection.parser.initialize(HTTPParser.RESPONSE, {}, MAX_HEAD_BYTES, 0)
    // Aborted while handling the data, or bytes after the response: the connection is not reusable.
    if (call.done) return this.discard(connection)
    call.done = true
    connection.call = null
    call.handler.onEnd()
    if (take < data.length) return this.discard(connection)
    // A borrowing handler may still be writing the lent bytes: #onRead decides after asking it.
    if (!call.lentOut) this.#release(connection, call)
  }

  /** @internal The lent bytes `call` held were written: its connection reads again, or goes back to the pool. */
  unpin(call: Call): void {
    const connection = call.connection
    // A late release from an exchange that no longer pins the connection changes nothing.
    if (!connection || connection.pinnedBy !== call) return
    connection.pinnedBy = null
    if (connection.closed) return
    if (call.done) {
      connection.socket.resume()
      this.#release(connection, call)
    } else if (!call.paused) connection.socket.resume()
  }

  #start(connection: UpstreamConnection, call: Call): void {
    connection.call = call
    call.connection = connection
    const { socket } = connection
    if (call.paused) socket.pause()
    const { head, body } = call
    let text = `${head.method} ${head.path} HTTP/1.1${CRLF}`
    let chunked = false
    for (const name in head.headers) {
      const value = head.headers[name] as string | string[]
      if (typeof value === 'string') text += `${name}: ${value}${CRLF}`
      else for (const item of value) text += `${name}: ${item}${CRLF}`
    }
    if (body && head.headers['content-length'] === undefined) {
      chunked = true
      text += `transfer-encoding: chunked${CRLF}`
    }
    socket.write(text + CRLF, 'latin1')
    if (!body) {
      call.bodySent = true
      return
    }
    let ended = false
    body.on('data', (chunk: Buffer) => {
      if (socket.destroyed) return
      let ok: boolean
      if (chunked) {
        socket.cork()
        socket.write(`${chunk.length.toString(16)}${CRLF}`, 'latin1')
        socket.write(chunk)
        ok = socket.write(CRLF, 'latin1')
        socket.uncork()
      } else ok = socket.write(chunk)
      if (!ok) {
        body.pause()
        socket.once('drain', () => body.resume())
      }
    })
    body.once('end', () => {
      ended = true
      call.bodySent = true
      if (chunked && !socket.destroyed) socket.write(`0${CRLF}${CRLF}`, 'latin1')
      if (call.done && connection.call === null) this.#release(connection, call)
    })
    // A client that goes away mid-body: the upstream must not wait for the rest.
    body.once('close', () => {
      if (!ended) call.abort(codedError('UND_ERR_ABORTED', 'The request body ended early'))
    })
    body.once('error', (error: NodeJS.ErrnoException) => call.abort(error))
  }

  /** Put a connection back after its exchange, once its request body was sent in full. */
  #release(connection: UpstreamConnection, call: Call): void {
    if (!call.bodySent) return // the body's 'end' comes back here
    if (connection.pinnedBy !== null) return // unpin() comes back here
    if (call.paused) {
      call.paused = false
      connection.socket.resume()
    }
    if (this.#closed || connection.closed || connection.socket.destroyed || !connection.keepAlive) return this.discard(connection)
    const idle = this.#idle.get(connection.origin) ?? []
    if (idle.length >= MAX_IDLE_PER_ORIGIN) return this.discard(connection)
    idle.push(connection)
    this.#idle.set(connection.origin, idle)
    connection.idleSince = performance.now()
    this.#sweepSoon()
  }

  /** Close sockets idle for longer than the keep-alive time, checking once a second while any are idle. */
  #sweepSoon(): void {
    if (this.#sweeper) return
    this.#sweeper = setInterval(() => {
      const now = performance.now()
      let idleLeft = 0
      for (const list of this.#idle.values()) {
        for (const connection of [...list]) {
          if (now - connection.idleSince >= connection.keepAliveMs) this.discard(connection)
          else idleLeft++
        }
      }
      if (idleLeft === 0 && this.#sweeper) {
        clearInterval(this.#sweeper)
        this.#sweeper = null
      }
    }, Math.min(1000, this.#options.keepAliveMs))
    this.#sweeper.unref()
  }

  /** Destroy a connection and forget it. */
  discard(connection: UpstreamConnection): void {
    if (connection.closed) return
    connection.closed = true
    connection.socket.destroy()
    this.#forget(connection)
  }

  #forget(connection: UpstreamConnection): void {
    if (!this.#all.delete(connection)) return
    connection.closed = true
    freeParser(connection.parser)
    const idle = this.#idle.get(connection.origin)
    if (idle) {
      const index = idle.indexOf(connection)
      if (index !== -1) idle.splice(index, 1)
    }
  }

  /** Close every connection; requests in flight fail. Safe to call twice. */
  async close(): Promise<void> {
    this.#closed = true
    if (this.#sweeper) clearInterval(this.#sweeper)
    this.#sweeper = null
    for (const connection of [...this.#all]) {
      connection.call?.fail(codedError('UND_ERR_DESTROYED', 'The upstream pool was closed'))
      this.discard(connection)
    }
  }
}

/** The `timeout=N` of a `Keep-Alive` response header, in ms, or null when absent or unreadable. */
export function keepAliveHintMs(value: string | string[] | undefined): number | null {
  const text = Array.isArray(value) ? value.join(',') : value
  const match = text ? /(?:^|[\s,;])timeout\s*=\s*(\d+)/i.exec(text) : null
  return match ? Number(match[1]) * 1000 : null
}
