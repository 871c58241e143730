/**
 * An upstream source: where the responses of a server's exchanges come from. The proxy's live
 * upstream pool (or a user's undici dispatcher) is one; a cassette is another
 * (`cassette/replay/replay-source.ts`), so `toolstorm replay` is the proxy with a cassette source and
 * every fault, run, redaction and admin route works there as in the proxy (docs/architecture.md).
 *
 * A source is asked once per exchange, when its head arrives (`begin`, synchronous, in arrival
 * order: a cassette claims its position there), and answers through the `UpstreamExchange` it
 * returns. `next` is the source behind it (the live one), for requests it does not answer itself.
 */
import type { Readable } from 'node:stream'
import type { UpstreamExchange } from './exchange-transport.js'
import type { Exchange } from './exchange.js'
import type { HeaderMap } from './http.js'

/** Where a live source sends one request: an origin and an origin-form path. */
export interface UpstreamTarget {
  readonly origin: string
  /** `host[:port]`, for the Host header. */
  readonly host: string
  readonly path: string
}

export interface SourceRequest {
  readonly exchange: Exchange
  readonly method: string
  /** The request target as the client sent it (origin-form path or absolute URL). */
  readonly rawUrl: string
  readonly headers: HeaderMap
  /** Where the request goes live; null when it named none (an origin-form request with no target). */
  readonly upstream: UpstreamTarget | null
  /** Aborts when the client goes away. */
  readonly signal: AbortSignal
  /** The request body, read when the exchange forwards it (null: none). Taken once. */
  takeBody(onChunk?: (chunk: Uint8Array | null) => void): Readable | null
}

export interface UpstreamSource {
  /** `live`, `cassette`: reports and logs name it. */
  readonly kind: string
  /** Whether it answers requests that name no upstream (then the server accepts origin-form requests without a target). */
  readonly routesItself?: boolean
  /** CONNECT ports the source can answer besides 443 (a cassette's recorded origins). */
  readonly connectPorts?: readonly number[]
  begin(request: SourceRequest, next: UpstreamSource): UpstreamExchange
  /** The server is closing: end what the source holds open (a recorded wait), release what it owns. */
  close?(): Promise<void>
}
