/**
 * What the in-process sinks share (`request-controller-sink.ts`, `msw-response-sink.ts`): a web
 * `Request` as the source sees it (`SourceRequest`), and the upstream half it forwards to.
 */
import { Readable } from 'node:stream'
import type { Exchange } from '../engine/exchange.js'
import type { ForwardOptions, SourceAction, UpstreamExchange, UpstreamResponse } from '../engine/exchange-transport.js'
import type { HeaderMap } from '../engine/http.js'
import type { SourceRequest, UpstreamSource, UpstreamTarget } from '../engine/upstream-source.js'
import { whileHeld } from './held-requests.js'

export interface WebRequestRoute {
  readonly exchange: Exchange
  /** The request's headers, as the storm saw them. */
  readonly headers: HeaderMap
  /** Where the request goes (default: its own URL). */
  readonly upstreamUrl?: URL
  readonly source: UpstreamSource
  readonly live: UpstreamSource
  /** The request body, when it was read already (an MCP request is named by its body). */
  readonly body?: Buffer
}

export abstract class WebRequestSink implements SourceRequest {
  readonly exchange: Exchange
  readonly headers: HeaderMap
  readonly upstream: UpstreamTarget
  protected readonly request: Request
  readonly #source: UpstreamExchange

  constructor(request: Request, route: WebRequestRoute) {
    this.request = request
    this.exchange = route.exchange
    this.headers = route.headers
    const url = route.upstreamUrl ?? new URL(request.url)
    this.upstream = { origin: url.origin, host: url.host, path: url.pathname + url.search }
    // Asked when the exchange begins: a cassette claims its position in arrival order.
    this.#source = route.source.begin(this, route.live)
  }

  get signal(): AbortSignal {
    return this.request.signal
  }

  get method(): string {
    return this.request.method
  }

  get rawUrl(): string {
    return this.request.url
  }

  get propagatesContext(): boolean {
    return this.#source.propagatesContext ?? false
  }

  abstract takeBody(onChunk?: (chunk: Uint8Array | null) => void): Readable | null

  forward(options: ForwardOptions): Promise<UpstreamResponse | SourceAction> {
    return this.#source.forward(options)
  }

  upstreamFailed(method: string, code: string): string {
    return this.#source.upstreamFailed?.(method, code) ?? this.upstream.origin + this.upstream.path
  }

  settle(): void {
    this.#source.settle?.()
  }

  /** A relayed body for the client, holding the request (so its abort) while it is read. */
  protected relayBody(body: AsyncIterable<Uint8Array>): ReadableStream<Uint8Array> {
    return toWebStream(whileHeld(this.request, body))
  }
}

/** A web body stream over a body source (node:stream/web's type and the global one differ only in name). */
function toWebStream(body: AsyncIterable<Uint8Array>): ReadableStream<Uint8Array> {
  return Readable.toWeb(Readable.from(body)) as unknown as ReadableStream<Uint8Array>
}
