/**
 * The in-process sink: carries out the exchange flow's actions on a request caught by
 * `@mswjs/interceptors` (global fetch and `node:http`), answering through its request controller,
 * over any upstream source (docs/architecture.md): undici to the real upstream
 * (`undici-source.ts`) by default, or a cassette.
 */
import http from 'node:http'
import { Readable } from 'node:stream'
import { getRawRequest } from '@mswjs/interceptors'
import type { ExchangeTransport, UpstreamResponse } from '../engine/exchange-transport.js'
import type { HeaderMap } from '../engine/http.js'
import type { ResponseWriter } from '../engine/streams/response-writer.js'
import { toWebResponse } from './web-response.js'
import { createConnectionResetError, createFetchResetError } from './network-error.js'
import { openStreamResponse } from './stream-response-writer.js'
import { WebRequestSink, type WebRequestRoute } from './web-request-sink.js'

/** The part of the interceptors' RequestController this sink uses. */
export interface ControllerLike {
  respondWith(response: Response): void | Promise<void>
  errorWith(reason?: unknown): void | Promise<void>
}

/** Yields the whole body once it is read. */
async function* whole(body: Promise<Buffer | null>): AsyncGenerator<Buffer> {
  const payload = await body
  if (payload && payload.length) yield payload
}

class RequestControllerSink extends WebRequestSink implements ExchangeTransport {
  readonly #controller: ControllerLike
  readonly #fromNodeHttp: boolean
  #body: Promise<Buffer | null> | null = null
  /** Once a streamed response is open, a reset breaks its body instead (the request is answered). */
  #writer: ResponseWriter | null = null

  constructor(request: Request, controller: ControllerLike, route: WebRequestRoute) {
    super(request, route)
    if (route.body !== undefined) this.#body = Promise.resolve(route.body)
    this.#controller = controller
    this.#fromNodeHttp = getRawRequest(request) instanceof http.ClientRequest
  }

  /** Read the body once, up front: an intercepted Request's body cannot be read again. */
  #wholeBody(): Promise<Buffer | null> {
    const request = this.request
    return (this.#body ??= request.body ? request.arrayBuffer().then((buffer) => Buffer.from(buffer)) : Promise.resolve(null))
  }

  takeBody(onChunk?: (chunk: Uint8Array | null) => void): Readable | null {
    if (!this.request.body) {
      onChunk?.(null)
      return null
    }
    if (onChunk) this.observeRequestBody(onChunk)
    return Readable.from(whole(this.#wholeBody()))
  }

  observeRequestBody(onChunk: (chunk: Uint8Array | null) => void): void {
    // The body is read whole anyway (forward needs it so): reading it earlier holds nothing more.
    this.#wholeBody().then(
      (payload) => {
        if (payload && payload.length) onChunk(payload)
        onChunk(null)
      },
      () => onChunk(null),
    )
  }

  async respond({ status, headers, body }: { status: number; headers: Record<string, string>; body: Uint8Array | null }): Promise<void> {
    await this.#controller.respondWith(toWebResponse(status, headers, body as Uint8Array<ArrayBuffer> | null))
  }

  async relay(upstream: UpstreamResponse): Promise<void> {
    const controller = this.#controller
    // An event stream's exchange ends when its last event was handed over (as on the proxy), so
    // its `elapsed` is the stream's duration. Other bodies end with the head: they are short, and
    // a client that never reads one must not keep its exchange running.
    const type = upstream.headers['content-type']
    if (!(Array.isArray(type) ? type.join(',') : (type ?? '')).toLowerCase().startsWith('text/event-stream')) {
      // The body is relayed as it arrived (still encoded), so its length and encoding stay.
      await controller.respondWith(toWebResponse(upstream.status, upstream.headers, this.relayBody(upstream.body)))
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
    const stream = this.relayBody(body())
    await controller.respondWith(toWebResponse(upstream.status, upstream.headers, stream))
    await relayed
  }

  reset(): void {
    if (this.#writer) return this.#writer.reset()
    void this.#controller.errorWith(this.#fromNodeHttp ? createConnectionResetError() : createFetchResetError())
  }

  open(status: number, headers: HeaderMap): ResponseWriter {
    const controller = this.#controller
    this.#writer = openStreamResponse((body) => void controller.respondWith(toWebResponse(status, headers, body)), this.request)
    return this.#writer
  }
}

/** The transport of one intercepted request: this sink over `route.source`. */
export function createRequestControllerTransport(request: Request, controller: ControllerLike, route: WebRequestRoute): ExchangeTransport {
  return new RequestControllerSink(request, controller, route)
}
