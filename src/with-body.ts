/**
 * A source's request with its body already read: what a source passes to the source behind it
 * (`UpstreamSource`'s `next`, engine/upstream-source.ts) after reading the body itself (a cassette
 * matched it; MSW tool handlers were asked first).
 */
import { Readable } from 'node:stream'
import type { SourceRequest } from './engine/upstream-source.js'

export function withBody(request: SourceRequest, bytes: Uint8Array | null): SourceRequest {
  return {
    exchange: request.exchange,
    method: request.method,
    rawUrl: request.rawUrl,
    headers: request.headers,
    upstream: request.upstream,
    get signal() {
      return request.signal
    },
    takeBody: () => (bytes && bytes.length ? Readable.from([bytes]) : null),
  }
}
