/**
 * The MSW sink: carries out the exchange flow's actions as the `Response` an MSW handler returns
 * (a reset is MSW's network error), over any upstream source (docs/architecture.md).
 */
import { Readable } from 'node:stream'
import type { ExchangeTransport, UpstreamResponse } from '../engine/exchange-transport.js'
import type { HeaderMap } from '../engine/http.js'
import type { ResponseWriter } from '../engine/streams/response-writer.js'
import { toWebResponse } from './web-response.js'
import { openStreamResponse } from './stream-response-writer.js'
import { WebRequestSink, type WebRequestRoute } from './web-request-sink.js'

/**
 * MSW's network error, made once. msw keeps each request that ended in a network error (its
 * network frame is only forgotten on a response), and the error's cause is this Response, whose
 * internal Error's stack would hold the sink that made it, and so the exchange (#31). Made here,
 * its stack holds none of them; an error response has no body, so one serves every reset.
 */
const NETWORK_ERROR = Response.error()

export interface MswTransport extends ExchangeTransport {
  /** What the handler returns; undefined until the flow answered (a reset: MSW's network error). */
  readonly answer: Response | undefined
  /** Resolves when a streamed answer opened (the flow keeps feeding it). */
  readonly opened: Promise<void>
}

class MswResponseSink extends WebRequestSink implements MswTransport {
  readonly opened: Promise<void>
  answer: Response | undefined = undefined
  readonly #payload: Buffer | null
  #open: () => void = () => undefined
  #writer: ResponseWriter | null = null

  constructor(request: Request, payload: Buffer | null, route: WebRequestRoute) {
    super(request, route)
    this.#payload = payload
    this.opened = new Promise<void>((resolve) => (this.#open = resolve))
  }

  takeBody(onChunk?: (chunk: Uint8Array | null) => void): Readable | null {
    const payload = this.#payload
    if (onChunk) this.observeRequestBody(onChunk)
    return payload && payload.length ? Readable.from([payload]) : null
  }

  /** The handler read the body up front; a fault answered before the upstream still shows it to observers (the model asked for). */
  observeRequestBody(onChunk: (chunk: Uint8Array | null) => void): void {
    const payload = this.#payload
    if (payload && payload.length) onChunk(payload)
    onChunk(null)
  }

  async respond({ status, headers, body }: { status: number; headers: Record<string, string>; body: Uint8Array | null }): Promise<void> {
    this.answer = toWebResponse(status, headers, body as Uint8Array<ArrayBuffer> | null)
  }

  async relay(upstream: UpstreamResponse): Promise<void> {
    this.answer = toWebResponse(upstream.status, upstream.headers, this.relayBody(upstream.body))
  }

  reset(): void {
    if (this.#writer) return this.#writer.reset()
    this.answer = NETWORK_ERROR
  }

  open(status: number, headers: HeaderMap): ResponseWriter {
    this.#writer = openStreamResponse((body) => {
      this.answer = toWebResponse(status, headers, body)
      this.#open()
    }, this.request)
    return this.#writer
  }
}

export function createMswResponseTransport(request: Request, payload: Buffer | null, route: WebRequestRoute): MswTransport {
  return new MswResponseSink(request, payload, route)
}
