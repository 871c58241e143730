/**
 * One request parsed by the wire server: its head, and its body as a stream only when it has one
 * (most proxied calls have none, and a stream per request is not free).
 */
import type { IncomingHttpHeaders } from 'node:http'
import type { Socket } from 'node:net'
import { Readable } from 'node:stream'

/** Flow control for a request body: reading pauses the socket, asking for more resumes it. */
export interface BodySource {
  pauseBody(): void
  resumeBody(): void
}

export class RequestBody extends Readable {
  readonly #source: BodySource

  constructor(source: BodySource) {
    super()
    this.#source = source
  }

  override _read(): void {
    this.#source.resumeBody()
  }

  /**
   * As node:http's IncomingMessage: the error a body is destroyed with (the client left before
   * sending it all) reaches only those who listen. A body nobody reads, because a fault answered
   * the request before it, has no listener, and an 'error' without one would end the process.
   */
  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    callback(this.listenerCount('error') > 0 ? error : null)
  }

  /** A chunk from the parser; the socket pauses while the reader is behind. */
  deliver(chunk: Buffer): void {
    if (!this.push(chunk)) this.#source.pauseBody()
  }
}

export class WireRequest {
  readonly method: string
  /** The request target as sent: origin-form (`/path?q`), absolute-form (forward proxies) or authority-form (CONNECT). */
  readonly url: string
  /** Lowercase names, repeats merged as node:http merges them. */
  readonly headers: IncomingHttpHeaders
  readonly httpVersion: string
  readonly socket: Socket
  /** The body, or null when the request declares none (no content-length above 0, no transfer-encoding). */
  readonly body: RequestBody | null
  /** The whole request, body included, was received. */
  complete = false

  constructor(method: string, url: string, headers: IncomingHttpHeaders, httpVersion: string, socket: Socket, body: RequestBody | null) {
    this.method = method
    this.url = url
    this.headers = headers
    this.httpVersion = httpVersion
    this.socket = socket
    this.body = body
  }
}

/** Whether a request head announces a body. */
export function announcesBody(headers: IncomingHttpHeaders): boolean {
  const length = headers['content-length']
  if (length !== undefined) return length !== '0'
  return headers['transfer-encoding'] !== undefined
}
