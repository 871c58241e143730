/**
 * The socket sink: carries out the exchange flow's actions on a request and response of the wire
 * server (http1/), over any upstream source (docs/architecture.md). Bodies stream both ways;
 * nothing is buffered unless a fault asks for the whole body.
 *
 * Over the live pool it has one optional capability, the pass-through fast path: forward and relay
 * in one go, writing the pool's lent read buffers straight to the client socket (pass-through.ts,
 * beside the pool).
 *
 * @note Hand-written rather than on http-proxy-3: `response_lost` must let the
 * upstream answer completely and then reset the client's TCP connection, and faults must act
 * between the phases of one exchange; a proxy library owns those phases and hides the sockets.
 */
import { Transform, type Readable } from 'node:stream'
import type { HeaderMap } from '../../engine/http.js'
import type { Exchange } from '../../engine/exchange.js'
import type { ExchangeTransport, ForwardOptions, PassThroughHooks, SourceAction, UpstreamExchange, UpstreamResponse } from '../../engine/exchange-transport.js'
import type { SourceRequest, UpstreamSource, UpstreamTarget } from '../../engine/upstream-source.js'
import type { ResponseWriter } from '../../engine/streams/response-writer.js'
import { relayToClient, sendComplete, type CompleteReply } from './client-replies.js'
import { endToEndHeaders } from '../hop-by-hop.js'
import type { WireRequest } from '../http1/wire-request.js'
import type { WireResponse } from '../http1/wire-response.js'
import { createProxyResponseWriter } from './proxy-response-writer.js'
import { resetOrDestroy } from './reset-socket.js'
import type { FlowControl, UpstreamClient } from '../upstream/upstream-client.js'
import { passThrough } from './pass-through.js'

const CLIENT_GONE = new Error('The client closed the connection.')
const ignoreError = () => undefined

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
  // A stage nobody reads (a fault answered first; the rest of the body is read only to be dropped)
  // still fails when the client leaves mid-body, and an 'error' no one hears would end the process
  // (#36). Whoever forwards the stage listens for itself.
  stage.on('error', ignoreError)
  return body.pipe(stage)
}

/** Where the sink's exchange goes: its source (and the live one behind it), and the pool the fast path may drive. */
export interface SinkRoute {
  readonly source: UpstreamSource
  readonly live: UpstreamSource
  /** Where the request goes live (null: it named none). */
  readonly upstream: UpstreamTarget | null
  /** The live pool, when `source` is the live source: enables the pass-through fast path. */
  readonly pool: UpstreamClient | null
}

class SocketSink implements ExchangeTransport, SourceRequest {
  readonly exchange: Exchange
  readonly rawUrl: string
  readonly upstream: UpstreamTarget | null
  readonly #req: WireRequest
  readonly #res: WireResponse
  readonly #route: SinkRoute
  readonly #socket: WireRequest['socket']
  #controller: AbortController | null = null
  #gone = false
  /** The upstream half, asked when the exchange began (a cassette claims its position) or, for the live source, when first needed. */
  #source: UpstreamExchange | null = null
  /** The request body as observeRequestBody reads it; `forwarded` once forward() took it. */
  #read: { body: Readable; forwarded: boolean } | null = null
  #upstreamControl: FlowControl | null = null

  constructor(req: WireRequest, res: WireResponse, exchange: Exchange, rawUrl: string, route: SinkRoute) {
    this.#req = req
    this.#res = res
    this.exchange = exchange
    this.rawUrl = rawUrl
    this.upstream = route.upstream
    this.#route = route
    this.#socket = req.socket
    res.once('close', () => {
      if (res.writableFinished) return
      this.#gone = true
      this.#controller?.abort(CLIENT_GONE)
      this.#upstreamControl?.abort(CLIENT_GONE)
    })
    // Sources other than the live one are asked at once: a cassette claims positions in arrival order.
    if (route.source !== route.live) this.#source = route.source.begin(this, route.live)
  }

  get method(): string {
    return this.#req.method
  }

  get headers(): HeaderMap {
    return this.#req.headers
  }

  // Created on demand: most exchanges never wait on anything the client could interrupt.
  get signal(): AbortSignal {
    if (!this.#controller) {
      this.#controller = new AbortController()
      if (this.#gone) this.#controller.abort(CLIENT_GONE)
    }
    return this.#controller.signal
  }

  get passThrough(): ((options: ForwardOptions, hooks: PassThroughHooks) => void) | undefined {
    return this.#route.pool && this.upstream ? this.#passThrough : undefined
  }

  #upstreamHalf(): UpstreamExchange {
    return (this.#source ??= this.#route.source.begin(this, this.#route.live))
  }

  takeBody(onChunk?: (chunk: Uint8Array | null) => void): Readable | null {
    let body: Readable | null = this.#req.body
    if (this.#read) {
      this.#read.forwarded = true
      body = this.#read.body
    }
    if (onChunk) {
      if (body) body = tap(body, onChunk)
      else onChunk(null)
    }
    return body
  }

  forward(options: ForwardOptions): Promise<UpstreamResponse | SourceAction> {
    if (this.#gone) return Promise.reject(CLIENT_GONE)
    return this.#upstreamHalf().forward(options)
  }

  upstreamFailed(method: string, code: string): string {
    const half = this.#upstreamHalf()
    return half.upstreamFailed?.(method, code) ?? this.exchange.record?.url ?? this.rawUrl
  }

  settle(): void {
    this.#source?.settle?.()
  }

  /** The fast path (a capability over the live pool; see `passThrough` and pass-through.ts). */
  #passThrough(options: ForwardOptions, hooks: PassThroughHooks): void {
    if (this.#gone) return hooks.done('cancelled', null)
    this.#upstreamControl = passThrough(this.#route.pool as UpstreamClient, this.upstream as UpstreamTarget, this.#req, this.#res, options, hooks, {
      gone: () => this.#gone,
      respond: (reply) => void this.respond(reply),
    })
    if (this.#gone) this.#upstreamControl.abort(CLIENT_GONE)
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

  reset(): void {
    resetOrDestroy(this.#socket)
    this.#dropUnforwarded()
    this.#req.body?.resume()
  }

  open(status: number, headers: HeaderMap): ResponseWriter {
    return createProxyResponseWriter(this.#res, this.#socket, status, endToEndHeaders(headers), this.signal)
  }
}

/** The transport of one exchange on the wire server: this sink over `route.source`. */
export function createSocketTransport(req: WireRequest, res: WireResponse, exchange: Exchange, rawUrl: string, route: SinkRoute): ExchangeTransport {
  return new SocketSink(req, res, exchange, rawUrl, route)
}
