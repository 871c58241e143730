/**
 * The MSW sink: carries out the exchange flow's actions as the `Response` an MSW handler returns
 * (a reset is MSW's network error), over any upstream source (docs/architecture.md).
 */
import { Readable } from 'node:stream'
import type { Exchange } from '../engine/exchange.js'
import type { ExchangeTransport, ForwardOptions, SourceAction, UpstreamExchange, UpstreamResponse } from '../engine/exchange-transport.js'
import type { HeaderMap } from '../engine/faults/fault.js'
import type { ResponseWriter } from '../engine/streams/response-writer.js'
import type { SourceRequest, UpstreamSource, UpstreamTarget } from '../engine/upstream-source.js'
import { toWebResponse } from '../engine/web-response.js'
import { openStreamResponse } from './stream-response-writer.js'

export interface MswRoute {
  readonly exchange: Exchange
  readonly headers: HeaderMap
  readonly source: UpstreamSource
  readonly live: UpstreamSource
}

export interface MswTransport extends ExchangeTransport {
  /** What the handler returns; undefined until the flow answered (a reset: MSW's network error). */
  readonly answer: Response | undefined
  /** Resolves when a streamed answer opened (the flow keeps feeding it). */
  readonly opened: Promise<void>
}

class MswResponseSink implements MswTransport, SourceRequest {
  readonly exchange: Exchange
  readonly headers: HeaderMap
  readonly upstream: UpstreamTarget
  readonly propagatesContext = true
  readonly opened: Promise<void>
  answer: Response | undefined = undefined
  readonly #request: Request
  readonly #payload: Buffer | null
  readonly #source: UpstreamExchange
  #open: () => void = () => undefined
  #writer: ResponseWriter | null = null

  constructor(request: Request, payload: Buffer | null, route: MswRoute) {
    this.#request = request
    this.#payload = payload
    this.exchange = route.exchange
    this.headers = route.headers
    const url = new URL(request.url)
    this.upstream = { origin: url.origin, host: url.host, path: url.pathname + url.search }
    this.opened = new Promise<void>((resolve) => (this.#open = resolve))
    this.#source = route.source.begin(this, route.live)
  }

  get signal(): AbortSignal {
    return this.#request.signal
  }

  get method(): string {
    return this.#request.method
  }

  get rawUrl(): string {
    return this.#request.url
  }

  takeBody(onChunk?: (chunk: Uint8Array | null) => void): Readable | null {
    const payload = this.#payload
    if (onChunk) {
      if (payload && payload.length) onChunk(payload)
      onChunk(null)
    }
    return payload && payload.length ? Readable.from([payload]) : null
  }

  forward(options: ForwardOptions): Promise<UpstreamResponse | SourceAction> {
    return this.#source.forward(options)
  }

  upstreamFailed(method: string, code: string): string {
    return this.#source.upstreamFailed?.(method, code) ?? this.#request.url
  }

  settle(): void {
    this.#source.settle?.()
  }

  async respond({ status, headers, body }: { status: number; headers: Record<string, string>; body: Uint8Array | null }): Promise<void> {
    this.answer = toWebResponse(status, headers, body as Uint8Array<ArrayBuffer> | null)
  }

  async relay(upstream: UpstreamResponse): Promise<void> {
    this.answer = toWebResponse(upstream.status, upstream.headers, Readable.toWeb(Readable.from(upstream.body)) as unknown as ReadableStream<Uint8Array>)
  }

  reset(): void {
    if (this.#writer) return this.#writer.reset()
    this.answer = Response.error()
  }

  open(status: number, headers: HeaderMap): ResponseWriter {
    this.#writer = openStreamResponse((body) => {
      this.answer = toWebResponse(status, headers, body)
      this.#open()
    }, this.#request.signal)
    return this.#writer
  }
}

export function createMswResponseTransport(request: Request, payload: Buffer | null, route: MswRoute): MswTransport {
  return new MswResponseSink(request, payload, route)
}
