/**
 * One response on a client connection of the wire server: the head is serialised here, framing
 * (content-length, chunked, or close-delimited for HTTP/1.0) decided here, and bytes go straight
 * to the socket. The head waits for the first body write, so head and body leave in one write.
 *
 * The surface is the part of `http.ServerResponse` the proxy uses (`writeHead`, `write`, `end`,
 * `flushHeaders`, `headersSent`, `destroyed`, `writableFinished`, `'drain'`, `'close'`).
 */
import { STATUS_CODES } from 'node:http'
import type { Socket } from 'node:net'
import { assertValidHeader, httpDate } from './headers.js'

export type OutgoingHeaders = Record<string, string | number | readonly string[] | undefined>

/** What a response needs from its connection. */
export interface ResponseOwner {
  readonly socket: Socket
  /** Seconds a kept-alive connection may stay idle (announced in `Keep-Alive: timeout=`). */
  readonly keepAliveSeconds: number
  /** The server is closing: responses end their connection. */
  readonly draining: boolean
  /** The response was handed to the socket in full. */
  responseFinished(res: WireResponse): void
}

type Listener = () => void

/** Bodies up to this size leave in one buffer with their head (one write, not a writev of two). */
const ONE_WRITE_BYTES = 16 * 1024

export class WireResponse {
  statusCode = 200
  headersSent = false
  /** `end()` was called and every byte handed to the socket. */
  writableFinished = false
  readonly socket: Socket
  /** False once the client asked to close, the server is closing, or the body is close-delimited. */
  keepAlive: boolean
  readonly #owner: ResponseOwner
  readonly #headRequest: boolean
  readonly #http10: boolean
  #head: string | null = null
  #chunked = false
  #noBody = false
  #closed = false
  #closeListeners: Listener[] | null = null

  constructor(owner: ResponseOwner, keepAlive: boolean, headRequest: boolean, http10: boolean) {
    this.#owner = owner
    this.socket = owner.socket
    this.keepAlive = keepAlive
    this.#headRequest = headRequest
    this.#http10 = http10
  }

  /** The socket's buffer is over its high-water mark: wait for 'drain' before writing more. */
  get writableNeedDrain(): boolean {
    return this.socket.writableNeedDrain
  }

  /** The client can no longer receive this response (it finished, or the connection is gone). */
  get destroyed(): boolean {
    return this.#closed || !this.socket.writable
  }

  /** `checked`: the headers come from a parser that refuses what would break a head (llhttp): not validated again. */
  writeHead(status: number, headers: OutgoingHeaders = {}, checked = false): this {
    if (this.headersSent) throw Object.assign(new Error('Cannot write headers after they are sent to the client'), { code: 'ERR_HTTP_HEADERS_SENT' })
    let head = `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'unknown'}\r\n`
    let length = false
    let date = false
    for (const name in headers) {
      const value = headers[name]
      if (value === undefined) continue
      const lower = name.toLowerCase()
      // The connection's framing and persistence are this server's to decide.
      if (lower === 'transfer-encoding' || lower === 'connection' || lower === 'keep-alive') continue
      if (lower === 'content-length') length = true
      else if (lower === 'date') date = true
      if (typeof value === 'object') {
        for (const item of value) {
          if (!checked) assertValidHeader(name, item)
          head += `${name}: ${item}\r\n`
        }
      } else {
        const text = typeof value === 'number' ? String(value) : value
        if (!checked) assertValidHeader(name, text)
        head += `${name}: ${text}\r\n`
      }
    }
    if (!date) head += `date: ${httpDate()}\r\n`
    // Every header was valid: from here the head counts as sent.
    this.headersSent = true
    this.statusCode = status
    if (this.#owner.draining) this.keepAlive = false
    // No body for HEAD, 1xx, 204 and 304, whatever the headers say (RFC 9110 §6.4.1).
    this.#noBody = this.#headRequest || status === 204 || status === 304 || (status >= 100 && status < 200)
    if (!length && !this.#noBody) {
      if (this.#http10) this.keepAlive = false
      else {
        this.#chunked = true
        head += 'transfer-encoding: chunked\r\n'
      }
    }
    head += this.keepAlive ? `connection: keep-alive\r\nkeep-alive: timeout=${this.#owner.keepAliveSeconds}\r\n\r\n` : 'connection: close\r\n\r\n'
    this.#head = head
    return this
  }

  /** Send the head now, even before any body byte (a stalled stream must still show its head). */
  flushHeaders(): void {
    if (!this.headersSent) this.writeHead(this.statusCode)
    if (this.#head === null || !this.socket.writable) return
    this.socket.write(this.#head, 'latin1')
    this.#head = null
  }

  /**
   * Write a body chunk. `onWritten` (here and in `end`) runs once the socket no longer needs the
   * chunk: its write completed or failed, or nothing was written (then on the next microtask).
   */
  write(chunk: Uint8Array | string, onWritten?: () => void): boolean {
    if (this.writableFinished || this.destroyed) {
      if (onWritten) queueMicrotask(onWritten)
      return false
    }
    if (!this.headersSent) this.writeHead(this.statusCode)
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk
    if (this.#noBody || bytes.length === 0) {
      this.flushHeaders()
      if (onWritten) queueMicrotask(onWritten)
      return true
    }
    return this.#send(bytes, false, onWritten)
  }

  end(chunk?: Uint8Array | string | null, onWritten?: () => void): void {
    if (this.writableFinished || this.destroyed) {
      if (onWritten) queueMicrotask(onWritten)
      return
    }
    const bytes = chunk === undefined || chunk === null ? null : typeof chunk === 'string' ? Buffer.from(chunk) : chunk
    if (!this.headersSent) this.writeHead(this.statusCode, { 'content-length': bytes?.length ?? 0 })
    this.#send(this.#noBody || bytes === null || bytes.length === 0 ? null : bytes, true, onWritten)
    this.writableFinished = true
    this.#closed = true
    this.#owner.responseFinished(this)
    this.#emitClose()
  }

  /** Head (if still held), body bytes in their framing, and the last chunk: one corked write. `onWritten` runs exactly once. */
  #send(bytes: Uint8Array | null, last: boolean, onWritten?: () => void): boolean {
    const socket = this.socket
    if (onWritten && (bytes === null || !socket.writable)) {
      queueMicrotask(onWritten)
      onWritten = undefined
    }
    if (!socket.writable) return false
    const chunked = this.#chunked && !this.#noBody
    const head = this.#head
    if (!chunked) {
      if (head === null) return bytes ? socket.write(bytes, onWritten) : true
      this.#head = null
      if (bytes === null) return socket.write(head, 'latin1')
      // A small answer (most proxied calls) leaves as one buffer, head and body: one plain write
      // costs less than corking two writes into a writev (stream buffering, a chunk list, mixed
      // string and buffer encoding). The head is latin1 by construction (assertValidHeader).
      if (bytes.length <= ONE_WRITE_BYTES) {
        const out = Buffer.allocUnsafe(head.length + bytes.length)
        out.write(head, 0, 'latin1')
        out.set(bytes, head.length)
        return socket.write(out, onWritten)
      }
      this.#head = head
    }
    socket.cork()
    let ok = true
    if (this.#head !== null) {
      ok = socket.write(this.#head, 'latin1')
      this.#head = null
    }
    if (bytes) {
      if (chunked) {
        socket.write(`${bytes.length.toString(16)}\r\n`, 'latin1')
        socket.write(bytes, onWritten)
        ok = socket.write('\r\n', 'latin1')
      } else ok = socket.write(bytes, onWritten)
    }
    if (last && chunked) ok = socket.write('0\r\n\r\n', 'latin1')
    socket.uncork()
    return ok
  }

  /** Drop the connection (the client sees it close). */
  destroy(): void {
    this.socket.destroy()
  }

  /** The connection is gone before the response finished. */
  connectionClosed(): void {
    if (this.#closed) return
    this.#closed = true
    this.#emitClose()
  }

  #emitClose(): void {
    const listeners = this.#closeListeners
    this.#closeListeners = null
    if (listeners) for (const listener of listeners) listener()
  }

  // The two events the proxy listens to, in EventEmitter's shape; 'close' fires once anyway.
  once(event: 'drain' | 'close', listener: Listener): this {
    if (event === 'drain') this.socket.once('drain', listener)
    else if (this.#closed) queueMicrotask(listener)
    else (this.#closeListeners ??= []).push(listener)
    return this
  }

  off(event: 'drain' | 'close', listener: Listener): this {
    if (event === 'drain') this.socket.off('drain', listener)
    else if (this.#closeListeners) this.#closeListeners = this.#closeListeners.filter((item) => item !== listener)
    return this
  }
}
