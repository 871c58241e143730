/**
 * The in-process transport: carries out the exchange flow's effects on a request caught by
 * `@mswjs/interceptors` (global fetch and `node:http`).
 *
 * Forwarding uses npm undici directly: it bypasses the interceptors (it neither uses global
 * fetch nor `http.ClientRequest`), so a forwarded request is never intercepted again.
 */
import http from 'node:http'
import { Readable } from 'node:stream'
import { getRawRequest } from '@mswjs/interceptors'
import { request as undiciRequest, type Dispatcher } from 'undici'
import type { ExchangeTransport, ForwardOptions, UpstreamResponse } from '../engine/exchange-transport.js'
import type { HeaderMap } from '../engine/faults/fault.js'
import type { ResponseWriter } from '../engine/streams/response-writer.js'
import { toWebResponse } from '../engine/web-response.js'
import { createConnectionResetError, createFetchResetError } from './network-error.js'
import { forwardHeaders } from './request-headers.js'
import { openStreamResponse } from './stream-response-writer.js'

/** The part of the interceptors' RequestController this transport uses. */
export interface ControllerLike {
  respondWith(response: Response): void | Promise<void>
  errorWith(reason?: unknown): void | Promise<void>
}

export interface InterceptorTransportOptions {
  /** Where to send the request (defaults to its own URL). */
  upstreamUrl?: URL
  dispatcher?: Dispatcher | undefined
}

export function createInterceptorTransport(request: Request, controller: ControllerLike, options: InterceptorTransportOptions = {}): ExchangeTransport {
  const { dispatcher } = options
  const upstreamUrl = options.upstreamUrl?.href ?? request.url
  const fromNodeHttp = getRawRequest(request) instanceof http.ClientRequest
  // Read the body once, up front: an intercepted Request's body cannot be replayed.
  let bodyPromise: Promise<Buffer | null> | null = null
  const body = () => (bodyPromise ??= request.body ? request.arrayBuffer().then((buffer) => Buffer.from(buffer)) : Promise.resolve(null))

  // Once a streamed response is open, a reset breaks its body instead (the request is answered).
  let writer: ResponseWriter | null = null

  return {
    signal: request.signal,
    propagatesContext: true,

    observeRequestBody(onChunk) {
      // The body is read whole anyway (forward needs it so): reading it earlier holds nothing more.
      body().then(
        (payload) => {
          if (payload && payload.length) onChunk(payload)
          onChunk(null)
        },
        () => onChunk(null),
      )
    },

    async forward(options: ForwardOptions): Promise<UpstreamResponse> {
      const headers = forwardHeaders(request.headers.entries(), options)
      const payload = await body()
      if (payload) headers['content-length'] = String(payload.length)
      if (payload && payload.length) options.onRequestBody?.(payload)
      options.onRequestBody?.(null)
      const response = await undiciRequest(upstreamUrl, {
        method: request.method as Dispatcher.HttpMethod,
        headers,
        body: payload,
        signal: request.signal,
        ...(dispatcher ? { dispatcher } : {}),
      })
      return { status: response.statusCode, headers: response.headers, body: response.body }
    },

    async respond({ status, headers, body: payload }) {
      await controller.respondWith(toWebResponse(status, headers, payload as Uint8Array<ArrayBuffer> | null))
    },

    async relay(upstream: UpstreamResponse) {
      // An event stream's exchange ends when its last event was handed over (as on the proxy), so
      // its `elapsed` is the stream's duration. Other bodies end with the head: they are short, and
      // a client that never reads one must not keep its exchange running.
      const type = upstream.headers['content-type']
      if (!(Array.isArray(type) ? type.join(',') : type ?? '').toLowerCase().startsWith('text/event-stream')) {
        // The body is relayed as it arrived (still encoded), so its length and encoding stay.
        await controller.respondWith(toWebResponse(upstream.status, upstream.headers, Readable.toWeb(Readable.from(upstream.body)) as unknown as ReadableStream<Uint8Array>))
        return
      }
      let ended!: () => void
      let broke!: (error: unknown) => void
      const relayed = new Promise<void>((resolve, reject) => ((ended = resolve), (broke = reject)))
      relayed.catch(() => undefined)
      const source = upstream.body
      async function* body(): AsyncGenerator<Uint8Array> {
        try {
          for await (const chunk of source) yield chunk
        } catch (error) {
          broke(error)
          throw error
        } finally {
          ended()
        }
      }
      const stream = Readable.toWeb(Readable.from(body())) as unknown as ReadableStream<Uint8Array>
      await controller.respondWith(toWebResponse(upstream.status, upstream.headers, stream))
      await relayed
    },

    reset() {
      if (writer) return writer.reset()
      void controller.errorWith(fromNodeHttp ? createConnectionResetError() : createFetchResetError())
    },

    open(status: number, headers: HeaderMap): ResponseWriter {
      writer = openStreamResponse((body) => void controller.respondWith(toWebResponse(status, headers, body)), request.signal)
      return writer
    },
  }
}
