/**
 * The socket transport: carries out the exchange flow's effects on a request and response of the
 * wire server (http1/). Bodies stream both ways; nothing is buffered unless a fault asks for the whole body.
 *
 * @note Hand-written rather than on http-proxy-3: `response_lost` must let the
 * upstream answer completely and then reset the client's TCP connection, and faults must act
 * between the phases of one exchange; a proxy library owns those phases and hides the sockets.
 */
import { Transform, type Readable } from 'node:stream'
import { errorCode } from '../engine/exchange-flow.js'
import type { ExchangeTransport, ForwardOptions, PassThroughHooks, UpstreamResponse } from '../engine/exchange-transport.js'
import type { HeaderMap } from '../engine/faults/fault.js'
import type { ResponseWriter } from '../engine/streams/response-writer.js'
import { relayToClient, sendComplete, type CompleteReply } from './client-replies.js'
import { endToEndHeaders } from './hop-by-hop.js'
import type { WireRequest } from './http1/wire-request.js'
import type { WireResponse } from './http1/wire-response.js'
import { createProxyResponseWriter } from './proxy-response-writer.js'
import { resetOrDestroy } from './reset-socket.js'
import type { FlowControl, UpstreamClient } from './upstream-client.js'
import { DispatchedResponse, sendUpstream } from './upstream-dispatch.js'
import type { Upstream } from './targets.js'
import type { UpstreamFailures } from './upstream-failures.js'

const CLIENT_GONE = new Error('The client closed the connection.')

/**
 * A pass-through stage that shows each chunk of `body` to `onChunk` (then `null`) on its way on (a
 * second 'data' listener would start the flow before undici listens, and undici would miss the
 * first chunks).
 */
function tap(body: Readable, onChunk: (chunk: Uint8Array | null) => void): Readable {
  const stage = new Transform({
    // A throwing observer fails the body stream (and so the exchange), not the process: these run in stream callbacks.
    transform(chunk: Buffer, _encoding, callback) {
      try {
        onChunk(chunk)
      } catch (error) {
        return callback(error as Error)
      }
      callback(null, chunk)
    },
    flush(callback) {
      try {
        onChunk(null)
      } catch (error) {
        return callback(error as Error)
      }
      callback()
    },
  })
  body.on('error', (error) => stage.destroy(error))
  return body.pipe(stage)
}

class ProxyTransport implements ExchangeTransport {
  readonly #req: WireRequest
  readonly #res: WireResponse
  readonly #upstream: Upstream
  readonly #client: UpstreamClient
  readonly #socket: WireRequest['socket']
  #controller: AbortController | null = null
  #gone = false
  #response: DispatchedResponse | null = null
  /** The request body as observeRequestBody reads it; `forwarded` once forward() took it. */
  #read: { body: Readable; forwarded: boolean } | null = null
  #upstreamControl: FlowControl | null = null

  readonly #failures: UpstreamFailures | undefined

  constructor(req: WireRequest, res: WireResponse, upstream: Upstream, client: UpstreamClient, failures?: UpstreamFailures) {
    this.#req = req
    this.#res = res
    this.#upstream = upstream
    this.#client = client
    this.#failures = failures
    this.#socket = req.socket
    res.once('close', () => {
      if (res.writableFinished) return
      this.#gone = true
      this.#controller?.abort(CLIENT_GONE)
      this.#response?.abort(CLIENT_GONE)
      this.#upstreamControl?.abort(CLIENT_GONE)
    })
  }

  // Created on demand: most exchanges never wait on anything the client could interrupt.
  get signal(): AbortSignal {
    if (!this.#controller) {
      this.#controller = new AbortController()
      if (this.#gone) this.#controller.abort(CLIENT_GONE)
    }
    return this.#controller.signal
  }

  #upstreamHeaders(options: ForwardOptions): Record<string, string | string[]> {
    const headers = endToEndHeaders(this.#req.headers, options.removeHeaders.length ? [...options.removeHeaders, 'host'] : ['host'])
    headers.host = this.#upstream.host
    for (const name in options.setHeaders) headers[name] = options.setHeaders[name] as string
    return headers
  }

  passThrough(options: ForwardOptions, hooks: PassThroughHooks): void {
    if (this.#gone) return hooks.done('cancelled', null)
    const req = this.#req
    const res = this.#res
    let status = 0
    let held: Buffer[] | null = null
    let flush: NodeJS.Immediate | null = null
    let ended = false
    /** The latest write that may hold bytes lent by the pool and has not completed (see UpstreamHandler.borrows). */
    let pendingLent: object | null = null
    // Body chunks wait for the end of the event loop's I/O phase and leave together: the socket
    // reads everything the upstream sent in that phase first, so a response that arrived in
    // several reads goes out as one writev with its head, and a streamed one is delayed by less
    // than a loop turn. Chunks lent by the pool cannot wait past their read: they leave when the
    // read ends (afterRead), and the pool reads no more into them until the write completes.
    const writeHeld = (end: boolean) => {
      const chunks = held
      held = null
      if (flush) clearImmediate(flush)
      flush = null
      const socket = this.#socket
      // Writes complete in order: when this one has, every earlier one has too.
      const token = {}
      const written = () => {
        if (pendingLent !== token) return
        pendingLent = null
        this.#upstreamControl?.release()
      }
      socket.cork()
      let ok = true
      const last = chunks ? chunks.length - 1 : -1
      if (chunks) for (let i = 0; i < (end ? last : chunks.length); i++) ok = res.write(chunks[i] as Buffer, i === last ? written : undefined)
      if (end) res.end(chunks?.[last], written)
      socket.uncork()
      // Bytes still queued on the socket (a slow client) may be the pool's read buffer: it waits.
      if (socket.writableLength > 0) pendingLent = token
      if (!ok && !end) this.#pauseUntilDrain()
    }
    const flushHeld = () => {
      flush = null
      if (!ended && held !== null) writeHeld(false)
    }
    this.#upstreamControl = this.#client.send(
      this.#upstream.origin,
      { method: req.method, path: this.#upstream.path, headers: this.#upstreamHeaders(options) },
      req.body,
      {
        borrows: true,
        afterRead: () => {
          if (held !== null) writeHeld(false)
          return pendingLent !== null
        },
        onHead: (statusCode, headers) => {
          status = statusCode
          hooks.upstreamHead(statusCode, headers)
          if (!res.destroyed) res.writeHead(statusCode, endToEndHeaders(headers))
        },
        onData: (chunk) => {
          if (res.destroyed) return
          if (held === null) {
            held = [chunk]
            flush = setImmediate(flushHeld)
          } else held.push(chunk)
        },
        onEnd: () => {
          ended = true
          writeHeld(true)
          hooks.done('response', status)
        },
        onError: (error) => {
          ended = true
          held = null
          if (flush) clearImmediate(flush)
          if (this.#gone || errorCode(error) === 'UND_ERR_ABORTED') return hooks.done('cancelled', status || null)
          if (status === 0 && !res.headersSent) {
            const reply = hooks.unreachable(error)
            void this.respond(reply)
            return
          }
          // The upstream died mid-body: the client must see a broken connection, never a clean end.
          resetOrDestroy(this.#socket)
          hooks.done('error', null, errorCode(error))
        },
      },
    )
    if (this.#gone) this.#upstreamControl.abort(CLIENT_GONE)
  }

  #paused = false

  #pauseUntilDrain(): void {
    const control = this.#upstreamControl
    if (!control || this.#paused) return
    this.#paused = true
    control.pause()
    this.#res.once('drain', () => {
      this.#paused = false
      control.resume()
    })
  }

  async forward(options: ForwardOptions): Promise<UpstreamResponse> {
    if (this.#gone) throw CLIENT_GONE
    const req = this.#req
    const headers = this.#upstreamHeaders(options)
    const response = new DispatchedResponse()
    this.#response = response
    let body: Readable | null = req.body
    if (this.#read) {
      this.#read.forwarded = true
      body = this.#read.body
    }
    const onRequestBody = options.onRequestBody
    if (onRequestBody) {
      if (body) body = tap(body, onRequestBody)
      else onRequestBody(null)
    }
    return sendUpstream(this.#client, { origin: this.#upstream.origin, path: this.#upstream.path, method: req.method, headers, body }, response)
  }

  observeRequestBody(onChunk: (chunk: Uint8Array | null) => void): void {
    const source = this.#req.body
    if (!source) return onChunk(null)
    // The stage's buffers (16 KiB each side) are all that is held before forwarding; backpressure
    // pauses the client beyond them.
    this.#read = { body: tap(source, onChunk), forwarded: false }
  }

  /** A body read early and never forwarded: read the rest and drop it, so the connection moves on. */
  #dropUnforwarded(): void {
    if (this.#read && !this.#read.forwarded) this.#read.body.resume()
  }

  async respond(reply: CompleteReply): Promise<void> {
    this.#dropUnforwarded()
    sendComplete(this.#res, this.#req.method, reply)
  }

  async relay(upstream: UpstreamResponse): Promise<void> {
    await relayToClient(this.#res, this.#socket, upstream, this.signal)
  }

  upstreamFailed(method: string, code: string): string {
    const upstream = this.#upstream
    return this.#failures?.failed(upstream, method, code) ?? upstream.origin + upstream.path
  }

  reset(): void {
    resetOrDestroy(this.#socket)
    this.#dropUnforwarded()
    this.#req.body?.resume()
  }

  open(status: number, headers: HeaderMap): ResponseWriter {
    return createProxyResponseWriter(this.#res, this.#socket, status, endToEndHeaders(headers), this.signal)
  }
}

/** `failures`: logs unreachable upstreams and redacts the URL a 502 names (without it, the URL is named as is). */
export function createProxyTransport(req: WireRequest, res: WireResponse, upstream: Upstream, client: UpstreamClient, failures?: UpstreamFailures): ExchangeTransport {
  return new ProxyTransport(req, res, upstream, client, failures)
}
