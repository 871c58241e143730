/**
 * One keep-alive socket to an upstream origin and the HTTP/1.1 client on it: it writes one
 * request at a time, parses the answer with Node's own native llhttp binding and hands the body
 * over as the socket delivers it (lent, when the handler borrows). The pool (upstream-pool.ts)
 * decides which connection a request goes on, and when one is kept, reused or closed.
 */
import net from 'node:net'
import type { Readable } from 'node:stream'
import tls from 'node:tls'
import type { ExchangeErrorReporter } from '../exchange-failure.js'
import { headerObject } from '../http1/headers.js'
import { freeParser, HTTPParser, MAX_HEADER_PAIRS, type NativeParser } from '../http1/native-parser.js'

/** What the caller learns about one upstream response. */
export interface UpstreamHandler {
  /** The final response head (informational 1xx answers are skipped). Header names lowercase. */
  onHead(status: number, headers: Record<string, string | string[]>): void
  /** A body chunk (`lent`: in the socket's read buffer, see `borrows`). Return false to pause the socket until `resume()`. */
  onData(chunk: Buffer, lent?: boolean): boolean | void
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

/** What a connection needs of its pool. */
export interface ConnectionOwner {
  readonly options: {
    /** Close an idle socket after this long (see UpstreamPoolOptions). */
    readonly keepAliveMs: number
    readonly headersTimeoutMs: number
    readonly bodyTimeoutMs: number
    readonly tls: tls.ConnectionOptions | undefined
    readonly onHandlerError: ExchangeErrorReporter
  }
  /** The exchange on `connection` is over: keep it for reuse, or close it. */
  release(connection: UpstreamConnection, call: Call): void
  /** Destroy `connection` and forget it. */
  discard(connection: UpstreamConnection): void
  /** `connection` closed by itself: forget it. */
  forget(connection: UpstreamConnection): void
  /** Last resort (see exchange-failure.ts): report once, drop the connection, fail the call if it is still open. */
  handlerThrew(connection: UpstreamConnection | null, call: Call | null, error: unknown): void
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
/** Stop reusing a socket this long before the server said it would close it (undici uses 2 s). */
const KEEP_ALIVE_MARGIN_MS = 1_000

export function codedError(code: string, message: string): NodeJS.ErrnoException {
  return Object.assign(new Error(message), { code })
}

/** One socket to an origin: carries one call at a time, then waits idle in the pool to be reused. */
export class UpstreamConnection {
  readonly origin: string
  readonly socket: net.Socket
  readonly parser: NativeParser
  /** The request in flight, if any. */
  call: Call | null = null
  reused = false
  /** The last response allowed the connection to be kept. */
  keepAlive = false
  /** Bytes still to come of a body read by the connection itself (see #readBody); 0 otherwise. */
  bodyRemaining = 0
  /** When it went idle (performance.now() ms), or -1 while in use. */
  idleSince = -1
  /** How long it may stay idle: the pool's bound, shortened by the server's `Keep-Alive: timeout=` hint. */
  keepAliveMs: number
  closed = false
  /** The call whose borrowing handler is still writing bytes of the read buffer: nothing is read until it releases them. */
  pinnedBy: Call | null = null
  readonly #owner: ConnectionOwner

  constructor(origin: string, owner: ConnectionOwner) {
    this.origin = origin
    this.#owner = owner
    const options = owner.options
    this.keepAliveMs = options.keepAliveMs
    this.parser = new HTTPParser()
    this.parser.initialize(HTTPParser.RESPONSE, {}, MAX_HEAD_BYTES, 0)
    const url = new URL(origin)
    const secure = url.protocol === 'https:'
    const port = Number(url.port || (secure ? 443 : 80))
    const host = url.hostname.replace(/^\[|\]$/g, '')
    // TLS sockets hand over the decrypted bytes in buffers of their own: no lending there.
    const readBuffer = secure ? null : Buffer.allocUnsafe(READ_BUFFER_BYTES)
    const socket: net.Socket = readBuffer
      ? net.connect({ host, port, onread: { buffer: readBuffer, callback: (bytes: number) => this.#onLentRead(readBuffer, bytes) } })
      : tls.connect({ ...options.tls, host, port, ...(net.isIP(host) ? {} : { servername: host }), ALPNProtocols: ['http/1.1'] })
    socket.setNoDelay(true)
    // One inactivity bound per socket, for the head and the body alike: re-arming timers on every
    // request costs more than the rest of the pool's work. Idle sockets are closed by the sweep.
    socket.setTimeout(Math.max(options.headersTimeoutMs, options.bodyTimeoutMs))
    this.socket = socket
    const parser = this.parser
    parser[HTTPParser.kOnHeaders] = (headers: string[]) => {
      this.call?.headers.push(...headers)
    }
    parser[HTTPParser.kOnHeadersComplete] = (_major: number, _minor: number, headers: string[] | undefined, _method: unknown, _url: unknown, statusCode: number, _message: unknown, _upgrade: unknown, shouldKeepAlive: boolean) => {
      const call = this.call
      if (!call || call.done) return 1
      const raw = headers ?? call.headers
      call.headers = []
      // Relayed, the lines past a client's limit (node:http's is 2000) would be dropped, the framing
      // ones with them: the exchange fails (502) rather than reach a client mis-framed.
      if (raw.length > MAX_HEADER_PAIRS * 2) {
        call.fail(codedError('UPSTREAM_BAD_RESPONSE', `The upstream's response head has more than ${MAX_HEADER_PAIRS} header lines`))
        owner.discard(this)
        return 1
      }
      // 1xx answers (100 Continue, 103 Early Hints) are not the response; llhttp reports the final one next.
      if (statusCode < 200 && statusCode !== 101) {
        call.informational = true
        return 1
      }
      call.informational = false
      this.keepAlive = shouldKeepAlive
      call.status = statusCode
      call.responseStarted = true
      const headerMap = headerObject(raw, 'response')
      const hint = keepAliveHintMs(headerMap['keep-alive'])
      // Reusing a socket the server is about to close would fail a request the proxy may not retry.
      if (hint !== null) this.keepAliveMs = Math.min(options.keepAliveMs, hint - KEEP_ALIVE_MARGIN_MS)
      if (this.keepAliveMs <= 0) this.keepAlive = false
      call.handler.onHead(statusCode, headerMap)
      // HEAD answers and 204/304 carry no body whatever their headers say.
      if (call.head.method === 'HEAD' || statusCode === 204 || statusCode === 304) return 1
      const length = headerMap['content-length']
      if (statusCode !== 101 && headerMap['transfer-encoding'] === undefined && typeof length === 'string' && length !== '0' && /^\d+$/.test(length)) {
        // A body of known length is read straight off the socket (#readBody): llhttp would copy
        // every body chunk into a new buffer. 2 stops parsing after the head, as for an upgrade.
        this.bodyRemaining = Number(length)
        return 2
      }
      return 0
    }
    parser[HTTPParser.kOnBody] = (chunk: Buffer) => {
      const call = this.call
      if (!call || call.done) return
      if (call.handler.onData(chunk) === false) call.pause()
    }
    parser[HTTPParser.kOnMessageComplete] = () => {
      const call = this.call
      // The head of a body read by #readBody: the message is not complete yet.
      if (!call || call.done || this.bodyRemaining > 0) return
      if (call.informational) {
        call.informational = false
        return
      }
      call.done = true
      this.call = null
      call.handler.onEnd()
      owner.release(this, call)
    }
    if (secure) socket.on('data', (data: Buffer) => this.#onRead(data, false))
    const onClose = (error?: NodeJS.ErrnoException) => {
      const call = this.call
      if (call && !call.done) {
        try {
          // A response delimited by the end of the connection ends here.
          if (call.responseStarted && !error) {
            const result = parser.finish()
            if (!(result instanceof Error) && call.done) return owner.forget(this)
          }
          const code = error?.code ?? (call.responseStarted ? 'UPSTREAM_TRUNCATED' : this.reused ? 'ECONNRESET' : 'UPSTREAM_CLOSED')
          call.fail(error ?? codedError(code, call.responseStarted ? 'The upstream closed the connection mid-response' : 'The upstream closed the connection before answering'))
        } catch (thrown) {
          owner.handlerThrew(this, call, thrown)
        }
      }
      owner.forget(this)
    }
    socket.on('error', (error: NodeJS.ErrnoException) => onClose(error))
    socket.on('close', () => onClose())
    socket.on('end', () => onClose())
    socket.on('timeout', () => {
      const call = this.call
      owner.discard(this)
      call?.fail(codedError(call.responseStarted ? 'UND_ERR_BODY_TIMEOUT' : 'UND_ERR_HEADERS_TIMEOUT', 'The upstream did not answer in time'))
    })
  }

  /**
   * `onread` callback of a plain-TCP socket: `bytes` bytes sit in its read buffer. Always true:
   * pausing goes through socket.pause(), as returning false would stop reading behind the
   * socket's back and resume() would not start it again.
   */
  #onLentRead(buffer: Buffer, bytes: number): boolean {
    this.#onRead(buffer.subarray(0, bytes), true)
    return true
  }

  /** One socket read, guarded: a handler that throws fails its call, not the process. */
  #onRead(data: Buffer, lent: boolean): void {
    const call = this.call
    try {
      this.#read(data, lent)
    } catch (error) {
      this.#owner.handlerThrew(this, call, error)
    }
  }

  /** One socket read. `lent`: `data` is a view of the connection's read buffer, overwritten by the next read. */
  #read(data: Buffer, lent: boolean): void {
    const call = this.call
    if (!call) {
      // Bytes on an idle connection: the server broke the protocol; never reuse it.
      this.#owner.discard(this)
      return
    }
    if (this.bodyRemaining > 0) this.#readBody(data, lent)
    else {
      const result = this.parser.execute(data)
      if (result instanceof Error) {
        this.#owner.discard(this)
        call.fail(Object.assign(result, { code: 'UPSTREAM_BAD_RESPONSE' }))
        return
      }
      if (this.bodyRemaining > 0 && result < data.length) this.#readBody(data.subarray(result), lent)
    }
    if (!call.lentOut) return
    call.lentOut = false
    if (this.closed) return // no more reads: the lent bytes stay as they are
    if (call.handler.afterRead?.() === true) {
      this.pinnedBy = call
      this.socket.pause()
      return
    }
    // The response ended in this read (the connection is still open, so not by a failure).
    if (call.done) this.#owner.release(this, call)
  }

  /** Bytes of a body of known length, handed over as they arrived (no copy); at its end the parser starts afresh. */
  #readBody(data: Buffer, lent: boolean): void {
    const call = this.call
    if (!call || call.done) return this.#owner.discard(this)
    const take = Math.min(data.length, this.bodyRemaining)
    this.bodyRemaining -= take
    const last = this.bodyRemaining === 0
    let chunk = take === data.length ? data : data.subarray(0, take)
    if (lent) {
      if (call.handler.borrows) call.lentOut = true
      else chunk = Buffer.from(chunk)
    }
    if (call.handler.onData(chunk, call.lentOut) === false && !last) call.pause()
    if (!last) return
    this.parser.initialize(HTTPParser.RESPONSE, {}, MAX_HEAD_BYTES, 0)
    // Aborted while handling the data, or bytes after the response: the connection is not reusable.
    if (call.done) return this.#owner.discard(this)
    call.done = true
    this.call = null
    call.handler.onEnd()
    if (take < data.length) return this.#owner.discard(this)
    // A borrowing handler may still be writing the lent bytes: #onRead decides after asking it.
    if (!call.lentOut) this.#owner.release(this, call)
  }

  /** The lent bytes `call` held were written: the connection reads again, or goes back to the pool. */
  unpin(call: Call): void {
    // A late release from an exchange that no longer pins the connection changes nothing.
    if (this.pinnedBy !== call) return
    this.pinnedBy = null
    if (this.closed) return
    if (call.done) {
      this.socket.resume()
      this.#owner.release(this, call)
    } else if (!call.paused) this.socket.resume()
  }

  /** Write `call`'s request on this connection; its answer comes back through the parser. */
  start(call: Call): void {
    this.call = call
    call.connection = this
    const { socket } = this
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
      if (call.done && this.call === null) this.#owner.release(this, call)
    })
    // A client that goes away mid-body: the upstream must not wait for the rest.
    body.once('close', () => {
      if (!ended) call.abort(codedError('UND_ERR_ABORTED', 'The request body ended early'))
    })
    body.once('error', (error: NodeJS.ErrnoException) => call.abort(error))
  }

  /** The parser's memory goes back to Node's pool (once closed). */
  free(): void {
    freeParser(this.parser)
  }
}

export class Call implements UpstreamCall {
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
  readonly #owner: ConnectionOwner

  constructor(owner: ConnectionOwner, head: UpstreamRequestHead, body: Readable | null, handler: UpstreamHandler) {
    this.#owner = owner
    this.head = head
    this.body = body
    this.handler = handler
  }

  abort(reason: Error = codedError('UND_ERR_ABORTED', 'Request aborted')): void {
    if (this.done) return
    this.aborted = true
    const connection = this.connection
    this.fail(Object.assign(reason, { code: (reason as NodeJS.ErrnoException).code ?? 'UND_ERR_ABORTED' }))
    if (connection) this.#owner.discard(connection)
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
    this.connection?.unpin(this)
  }

  fail(error: NodeJS.ErrnoException): void {
    if (this.done) return
    this.done = true
    this.body?.unpipe?.()
    try {
      this.handler.onError(error)
    } catch (thrown) {
      // Failures arrive from socket, timer and stream events: a throw here would be uncaught.
      this.#owner.handlerThrew(this.connection, this, thrown)
    }
  }
}

/** The `timeout=N` of a `Keep-Alive` response header, in ms, or null when absent or unreadable. */
export function keepAliveHintMs(value: string | string[] | undefined): number | null {
  const text = Array.isArray(value) ? value.join(',') : value
  const match = text ? /(?:^|[\s,;])timeout\s*=\s*(\d+)/i.exec(text) : null
  return match ? Number(match[1]) * 1000 : null
}
