/**
 * The data plane's HTTP/1.1 server: sockets in, `'request'` (a `WireRequest` and a `WireResponse`)
 * and `'connect'` (CONNECT requests, with the socket and the bytes after the head) out.
 *
 * @note Hand-written instead of `node:http` on purpose. The proxy's work per exchange is small,
 * and node:http's IncomingMessage/ServerResponse machinery (a stream pair per request, header
 * objects built twice, 'finish'/'close' ticks) cost as much as the rest of the proxy: replacing it
 * took the proxy's CPU per 64 B request from ~140 µs to ~70-110 µs (`npm run bench -- proxy`,
 * docs/benchmarks.md). It parses with the same native llhttp and the same strict
 * settings as node:http, and keeps node:http's behaviour where clients can see it: 400/431 on
 * malformed heads, 400 on an HTTP/1.1 request without Host, `Expect: 100-continue`, 417,
 * keep-alive with `Keep-Alive: timeout=`, pipelined requests answered in order, a half-closed
 * client treated as gone, headers/request/keep-alive timeouts. Where node:http has a gap it is
 * closed: a head of more than 2000 lines gets 431 (node:http drops the extra lines, framing ones
 * included), an HTTP/1.0 request with Transfer-Encoding ends its connection, a pipelined exchange
 * starts only once the socket took the previous response, and an exception while serving one
 * exchange fails that exchange ('exchangeError'), not the process. docs/proxy.md lists the limits.
 */
import { EventEmitter } from 'node:events'
import { STATUS_CODES } from 'node:http'
import { errorBody } from '../../error-body.js'
import net, { type AddressInfo, type Socket } from 'node:net'
import { headerObject } from './headers.js'
import { freeParser, HTTPParser, MAX_HEADER_PAIRS, METHODS, type NativeParser } from './native-parser.js'
import { announcesBody, RequestBody, WireRequest, type BodySource } from './wire-request.js'
import { WireResponse, type ResponseOwner } from './wire-response.js'

export interface WireServerOptions {
  /** Largest request head in bytes (431 above). Default 16 KiB. */
  maxHeaderSize?: number
  /** Time to receive a complete head, from its first byte (or from connecting). Default 60 s. */
  headersTimeoutMs?: number
  /** Time to receive a complete request, body included. Default 300 s. */
  requestTimeoutMs?: number
  /** An idle kept-alive connection is closed after this long (announced to clients). Default 5 s. */
  keepAliveTimeoutMs?: number
}

export interface WireServerEvents {
  request: [req: WireRequest, res: WireResponse]
  connect: [req: WireRequest, socket: Socket, head: Buffer]
  /** Errors of the listening socket (EADDRINUSE…). */
  error: [error: Error]
  /**
   * An exception escaped while serving one exchange (a 'request' listener, or what it set up that
   * runs in this connection's socket callbacks). The listener may answer `res` (still unanswered
   * if `!res.headersSent`); the connection then closes. Without a listener the connection just closes.
   */
  exchangeError: [error: unknown, req: WireRequest | null, res: WireResponse | null]
}

/** Idle connections are closed this long after the announced keep-alive timeout, as node:http does, so a client never races a close it was not told about. */
const KEEP_ALIVE_GRACE_MS = 1_000
const SWEEP_INTERVAL_MS = 1_000
const PAUSED_BY_BODY = 1
const PAUSED_BY_QUEUE = 2
/**
 * Pipelined requests that may wait for their turn on one connection. At this depth parsing stops
 * (after a request without a body) and the bytes that follow wait unparsed until the queue
 * shrinks; the socket is not read meanwhile. node:http parses all of a socket read (64 KiB).
 */
export const PIPELINE_DEPTH = 16

function refusalBody(why: string): string {
  return JSON.stringify(errorBody('proxy_error', 'ERR_REQUEST_MALFORMED', `Failed to read the request: ${why}. Send a well-formed HTTP/1.1 request.`))
}

/** A refusal through a response of the server (after the head was read). */
function sendRefusal(res: WireResponse, status: number, why: string): void {
  const body = refusalBody(why)
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) })
  res.end(body)
}

/** A whole answer for a request that could not be read: the status and the JSON error body naming why (docs/errors.md). */
function refusal(status: number, why: string): string {
  const body = refusalBody(why)
  return `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nconnection: close\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
}

/** The parser's reason for refusing a head, as a message names it (`HPE_UNEXPECTED_CONTENT_LENGTH: …`). */
function parserReason(error: Error & { code?: string; reason?: string }): string {
  const reason = (error.reason ?? error.message).replace(/^Parse Error: /, '')
  return error.code ? `${reason} (${error.code})` : reason
}

/** One socket a client opened to the proxy: parses its requests and answers them in order (pipelined ones queue). */
class ClientConnection implements ResponseOwner, BodySource {
  readonly socket: Socket
  readonly server: WireServer
  readonly parser: NativeParser
  readonly keepAliveSeconds: number
  readonly maxHeaderSize: number
  /** Header lines and URL delivered before the head completed (long heads come in pieces). */
  pendingHeaders: string[] = []
  pendingUrl = ''
  /** The request whose body the parser is reading. */
  reading: WireRequest | null = null
  /** The exchange whose response is being written. */
  current: WireResponse | null = null
  /** Pipelined requests parsed while an earlier response is still being written. */
  readonly queue: Array<[WireRequest, WireResponse]> = []
  connectRequest: WireRequest | null = null
  /** performance.now() when the head being read started (or the connection opened); 0: none. */
  headStartedAt: number
  /** Bytes of a head not yet complete have arrived. */
  midHead = false
  /** Nothing received yet. */
  fresh = true
  requestStartedAt = 0
  idleSince: number
  /** No more requests are read: the last response closes the connection. */
  closing = false
  closed = false
  paused = 0
  /** An HTTP/1.0 request with Transfer-Encoding was read: requests after it are not served (RFC 9112 §6.1). */
  lastRequestRead = false
  /** Bytes not parsed yet because the queue was full (PIPELINE_DEPTH). */
  held: Buffer | null = null

  constructor(server: WireServer, socket: Socket, options: Required<WireServerOptions>) {
    this.server = server
    this.socket = socket
    this.keepAliveSeconds = Math.floor(options.keepAliveTimeoutMs / 1000)
    this.maxHeaderSize = options.maxHeaderSize
    this.headStartedAt = performance.now()
    this.idleSince = this.headStartedAt
    const parser = new HTTPParser()
    parser.initialize(HTTPParser.REQUEST, {}, this.maxHeaderSize, 0)
    this.parser = parser
    // Long heads come in batches of 32 lines; all are kept (maxHeaderSize bounds them) so that a
    // head with too many lines is refused, never forwarded without the lines past the limit.
    parser[HTTPParser.kOnHeaders] = (headers: string[], url: string) => {
      this.pendingHeaders.push(...headers)
      this.pendingUrl += url
    }
    parser[HTTPParser.kOnHeadersComplete] = this.onHeadersComplete.bind(this)
    parser[HTTPParser.kOnBody] = (chunk: Buffer) => this.reading?.body?.deliver(chunk)
    parser[HTTPParser.kOnMessageComplete] = () => {
      const req = this.reading
      this.reading = null
      this.requestStartedAt = 0
      if (this.current === null) this.idleSince = performance.now()
      // The body's backpressure ends with the body. A body that filled its stream's buffer (16 KiB)
      // before anyone read it paused the socket; read after its end, it never asks for more (a
      // stream calls _read no more once ended), and the socket, paused for a body that is whole,
      // would never read the next request: the connection hung until the idle sweep closed it.
      this.unpause(PAUSED_BY_BODY)
      if (!req) return
      req.complete = true
      req.body?.push(null)
    }
    socket.setNoDelay(true)
    socket.on('data', (data: Buffer) => this.onData(data))
    socket.on('end', () => this.onEnd())
    socket.on('close', () => this.onClose())
    socket.on('error', () => undefined)
  }

  onHeadersComplete(major: number, minor: number, headers: string[] | undefined, method: number, url: string | undefined, _status: unknown, _message: unknown, upgrade: boolean, keepAlive: boolean): number {
    const raw = headers ?? this.pendingHeaders
    const target = url || this.pendingUrl
    this.pendingHeaders = []
    this.pendingUrl = ''
    this.headStartedAt = 0
    this.midHead = false
    // node:http drops the lines past maxHeadersCount, Content-Length and Transfer-Encoding with
    // them; forwarding such a head would change its framing. Refused as an oversized head is.
    if (raw.length > MAX_HEADER_PAIRS * 2) {
      this.parseError(Object.assign(new Error(`more than ${MAX_HEADER_PAIRS} header lines`), { code: 'HPE_HEADER_OVERFLOW' }))
      return 0
    }
    const methodName = METHODS[method] ?? 'GET'
    const map = headerObject(raw, 'request')
    const version = `${major}.${minor}`
    if (upgrade && methodName === 'CONNECT') {
      // Parsing stops here (2: upgrade); the socket goes to the 'connect' listener after execute().
      this.connectRequest = new WireRequest(methodName, target, map, version, this.socket, null)
      return 2
    }
    if (this.closing || this.lastRequestRead) return 0
    const http10 = major === 1 && minor === 0
    // RFC 9112 §6.1: Transfer-Encoding in an HTTP/1.0 message makes its framing suspect; the
    // connection closes after the answer, and what follows on it is not served (node:http serves it).
    if (http10 && map['transfer-encoding'] !== undefined) {
      this.lastRequestRead = true
      keepAlive = false
    }
    const body = announcesBody(map) ? new RequestBody(this) : null
    const req = new WireRequest(methodName, target, map, version, this.socket, body)
    this.reading = req
    this.requestStartedAt = performance.now()
    const res = new WireResponse(this, keepAlive, methodName === 'HEAD', http10)
    if (this.current) {
      // Answered in order: this one waits, and reading stops until its turn.
      this.queue.push([req, res])
      this.pause(PAUSED_BY_QUEUE)
      // A full queue: parsing stops after this request (2 stops llhttp as after an upgrade); onData holds the rest.
      if (body === null && this.queue.length >= PIPELINE_DEPTH) return 2
    } else this.dispatch(req, res)
    return 0
  }

  dispatch(req: WireRequest, res: WireResponse): void {
    this.current = res
    const http11 = req.httpVersion === '1.1'
    // RFC 9112 §3.2: an HTTP/1.1 request without Host gets a 400.
    if (http11 && req.headers.host === undefined) {
      res.keepAlive = false
      sendRefusal(res, 400, 'an HTTP/1.1 request needs a Host header')
      return
    }
    const expect = req.headers.expect
    if (http11 && expect !== undefined) {
      if (!/^100-continue$/i.test(String(expect).trim())) {
        res.keepAlive = false
        sendRefusal(res, 417, `"Expect: ${String(expect).slice(0, 64)}" is not supported (only 100-continue is)`)
        return
      }
      this.socket.write('HTTP/1.1 100 Continue\r\n\r\n', 'latin1')
    }
    try {
      this.server.emit('request', req, res)
    } catch (error) {
      this.failed(error, req, res)
    }
  }

  /**
   * Last resort: an exception escaped while serving an exchange. It fails (the 'exchangeError'
   * listener may answer it) and the connection closes after it, its parser state unknown; the
   * server goes on. See ../exchange-failure.ts.
   */
  failed(error: unknown, req: WireRequest | null, res: WireResponse | null): void {
    this.closing = true
    if (res) res.keepAlive = false
    if (req?.body && !req.complete) req.body.destroy(Object.assign(new Error('The exchange failed'), { code: 'ERR_EXCHANGE_FAILED' }))
    try {
      this.server.emit('exchangeError', error, req, res)
    } catch {
      // A listener that throws as well: the connection still closes below.
    }
    if (!res?.writableFinished) this.socket.destroy()
  }

  responseFinished(res: WireResponse): void {
    if (this.current !== res) return
    this.current = null
    // An answer given before the body arrived (a fault): the rest of the body is read and dropped.
    const unread = this.queue.length === 0 ? this.reading : null
    if (unread?.body && !unread.complete) unread.body.resume()
    if (!res.keepAlive || this.server.closing) {
      this.closing = true
      this.queue.length = 0
      this.socket.end()
      return
    }
    const next = this.queue.shift()
    if (next) {
      // Held bytes are parsed first (after this call returns: no parsing inside a handler's end()); the socket waits for them.
      if (this.held !== null) queueMicrotask(() => this.parseHeld())
      else if (this.queue.length === 0) this.unpause(PAUSED_BY_QUEUE)
      // A client that pipelines without reading: the next exchange starts once the socket took
      // this one's bytes, so it holds one response in memory and one upstream socket, not one each.
      if (this.socket.writableNeedDrain) {
        this.current = next[1]
        this.socket.once('drain', () => {
          if (!this.closed) this.dispatch(next[0], next[1])
        })
      } else this.dispatch(next[0], next[1])
      return
    }
    this.idleSince = performance.now()
  }

  onData(data: Buffer): void {
    if (this.closing) return
    if (this.held !== null) {
      // Read before the pause took effect: it waits behind the held bytes.
      this.held = Buffer.concat([this.held, data])
      return
    }
    this.fresh = false
    if (this.reading === null && !this.midHead) {
      this.midHead = true
      this.headStartedAt = performance.now()
    }
    let chunk = data
    try {
      // A non-CONNECT upgrade request is served as a plain request (no upgrade is offered); llhttp
      // stops after it, so parsing resumes on the bytes that follow.
      for (let round = 0; round < 64; round++) {
        const result = this.parser.execute(chunk)
        if (typeof result !== 'number') return this.parseError(result)
        if (this.connectRequest) return this.handOver(this.connectRequest, chunk.subarray(result))
        if (result >= chunk.length || result <= 0 || this.closing) return
        chunk = chunk.subarray(result)
        // llhttp stopped at a message boundary, after an upgrade request or a full queue. A fresh
        // parser reads what follows: resumed, it keeps the upgrade flag and lets a malformed next
        // head pass unreported, one byte at a time.
        this.parser.initialize(HTTPParser.REQUEST, {}, this.maxHeaderSize, 0)
        if (this.queue.length >= PIPELINE_DEPTH) {
          this.held = chunk
          return
        }
      }
    } catch (error) {
      // Thrown in a parser callback: by whoever reads a request body (it is delivered here), or a
      // 'connect' listener. 'request' listeners are guarded in dispatch().
      this.failed(error, this.reading, this.current)
    }
  }

  /** The queue shrank below PIPELINE_DEPTH: parse what was held; read the socket again once nothing is held or queued. */
  parseHeld(): void {
    const held = this.held
    if (held === null || this.closed || this.queue.length >= PIPELINE_DEPTH) return
    this.held = null
    this.onData(held)
    if (this.held === null && this.queue.length === 0) this.unpause(PAUSED_BY_QUEUE)
  }

  /** Malformed input: a 400 (431 for an oversized head) when no response started, else a close. */
  parseError(error: Error & { code?: string }): void {
    this.closing = true
    this.reading?.body?.destroy(Object.assign(new Error(`Bad request: ${error.code ?? error.message}`), { code: error.code ?? 'HPE_INVALID' }))
    if (this.current?.headersSent || !this.socket.writable) {
      this.socket.destroy()
      return
    }
    this.current?.connectionClosed()
    this.current = null
    const overflow = error.code === 'HPE_HEADER_OVERFLOW'
    this.socket.end(refusal(overflow ? 431 : 400, overflow ? `the request head is over ${this.maxHeaderSize} bytes or ${MAX_HEADER_PAIRS} lines` : parserReason(error)), 'utf8')
  }

  /** CONNECT: the socket leaves this server for the 'connect' listener, with what followed the head. */
  handOver(req: WireRequest, head: Buffer): void {
    this.closing = true
    this.server.forget(this)
    freeParser(this.parser)
    const socket = this.socket
    socket.removeAllListeners('data')
    socket.removeAllListeners('end')
    socket.removeAllListeners('close')
    socket.removeAllListeners('error')
    ;(socket as { readableFlowing: boolean | null }).readableFlowing = null
    if (this.server.listenerCount('connect') === 0) {
      socket.destroy()
      return
    }
    this.server.emit('connect', req, socket, head)
  }

  /**
   * The client half-closed: like node:http (httpAllowHalfOpen false), the connection ends here;
   * what is in flight sees the client gone once the socket closes (onClose).
   */
  onEnd(): void {
    this.closing = true
    this.socket.end()
  }

  onClose(): void {
    this.closed = true
    this.closing = true
    this.server.forget(this)
    freeParser(this.parser)
    const current = this.current
    try {
      // The response hears first: whoever forwards the body then knows the client left.
      current?.connectionClosed()
      for (const [, res] of this.queue) res.connectionClosed()
      this.queue.length = 0
      const req = this.reading
      if (req?.body && !req.complete) req.body.destroy(Object.assign(new Error('aborted'), { code: 'ECONNRESET' }))
    } catch (error) {
      // A 'close' listener of the exchange threw: reported; the socket is gone anyway.
      this.failed(error, this.reading, current)
    }
  }

  get draining(): boolean {
    return this.server.closing
  }

  get idle(): boolean {
    return this.current === null && this.reading === null && !this.midHead
  }

  pauseBody(): void {
    this.pause(PAUSED_BY_BODY)
  }

  resumeBody(): void {
    this.unpause(PAUSED_BY_BODY)
  }

  pause(reason: number): void {
    if (this.paused === 0) this.socket.pause()
    this.paused |= reason
  }

  unpause(reason: number): void {
    if ((this.paused & reason) === 0) return
    this.paused &= ~reason
    if (this.paused === 0) this.socket.resume()
  }

  /** Enforce the timeouts; `now` from performance.now(). */
  check(now: number, options: Required<WireServerOptions>): void {
    if (this.headStartedAt !== 0 && (this.midHead || this.fresh) && now - this.headStartedAt > options.headersTimeoutMs) return this.timedOut()
    if (this.requestStartedAt !== 0 && now - this.requestStartedAt > options.requestTimeoutMs) return this.timedOut()
    if (!this.fresh && this.idle && now - this.idleSince > options.keepAliveTimeoutMs + KEEP_ALIVE_GRACE_MS) this.socket.destroy()
  }

  timedOut(): void {
    this.closing = true
    this.headStartedAt = 0
    this.requestStartedAt = 0
    if (this.current?.headersSent || !this.socket.writable) this.socket.destroy()
    else this.socket.end(refusal(408, 'the request head or body took too long to arrive'), 'utf8')
  }
}

/**
 * @example
 * const server = new WireServer()
 * server.on('request', (req, res) => res.writeHead(200, { 'content-length': 2 }).end('ok'))
 * server.listen(0, '127.0.0.1', () => console.log(server.address()))
 */
export class WireServer extends EventEmitter<WireServerEvents> {
  readonly #options: Required<WireServerOptions>
  readonly #net: net.Server
  readonly #connections = new Set<ClientConnection>()
  #sweeper: NodeJS.Timeout | null = null
  closing = false

  constructor(options: WireServerOptions = {}) {
    super()
    this.#options = {
      maxHeaderSize: options.maxHeaderSize ?? 16 * 1024,
      headersTimeoutMs: options.headersTimeoutMs ?? 60_000,
      requestTimeoutMs: options.requestTimeoutMs ?? 300_000,
      keepAliveTimeoutMs: options.keepAliveTimeoutMs ?? 5_000,
    }
    // Half-open so the server, not Node, decides when to end its side (see onEnd).
    this.#net = net.createServer({ allowHalfOpen: true, noDelay: true }, (socket) => this.handleConnection(socket))
    this.#net.on('error', (error) => this.emit('error', error))
  }

  /** Serve a connection that did not come from `listen` (a socket inside a CONNECT tunnel). */
  handleConnection(socket: Socket): void {
    if (this.closing) {
      socket.destroy()
      return
    }
    this.#connections.add(new ClientConnection(this, socket, this.#options))
    this.#sweepWhileConnected()
  }

  /** @internal */
  forget(connection: ClientConnection): void {
    this.#connections.delete(connection)
  }

  listen(port: number, host: string, callback?: () => void): this {
    this.#net.listen(port, host, callback)
    return this
  }

  address(): AddressInfo | null {
    return this.#net.address() as AddressInfo | null
  }

  /** Stop accepting; idle connections close now, busy ones after their response. */
  close(callback?: (error?: Error) => void): this {
    this.closing = true
    if (this.#net.listening) this.#net.close(callback)
    else if (callback) queueMicrotask(() => callback())
    this.closeIdleConnections()
    return this
  }

  closeIdleConnections(): void {
    for (const connection of this.#connections) if (connection.idle) connection.socket.destroy()
  }

  closeAllConnections(): void {
    for (const connection of this.#connections) connection.socket.destroy()
  }

  /** One timer for every connection's timeouts, running only while there are connections. */
  #sweepWhileConnected(): void {
    if (this.#sweeper) return
    this.#sweeper = setInterval(() => {
      if (this.#connections.size === 0) {
        clearInterval(this.#sweeper as NodeJS.Timeout)
        this.#sweeper = null
        return
      }
      const now = performance.now()
      for (const connection of this.#connections) connection.check(now, this.#options)
    }, SWEEP_INTERVAL_MS)
    this.#sweeper.unref()
  }
}
