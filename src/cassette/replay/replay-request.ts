/**
 * A live request as replay compares it with the recorded ones: redacted and bounded as the
 * recording stored requests, with its match view (match-key.ts) computed once.
 */
import type { HeaderMap } from '../../engine/http.js'
import type { Redactor } from '../../redact/index.js'
import type { MatchOptions, StoredBody } from '../format/cassette-schema.js'
import { BodyCapture, captureBytes } from '../format/body-capture.js'
import { matchView, type MatchView } from '../format/match-key.js'
import { storeBody } from '../format/store-body.js'
import { headerOf, storeHeaders } from '../format/store-headers.js'

/** A live request to match. `url` is origin-form or absolute. */
export interface LiveRequest {
  readonly method: string
  readonly url: string
  readonly headers: HeaderMap
  /** The body bytes, or a capture of them made while they streamed in. */
  readonly body: Uint8Array | BodyCapture | null
  /** The route the proxy named it by (a miss looks for the closest exchange of the same route first). */
  readonly route?: string
}

/** A live request as replay compares it: redacted, bounded, its match view computed. */
export type NormalisedRequest = MatchView & {
  readonly url: string
  /** The stored (redacted) body; absent when only the match view was kept (then a miss has no body diff). */
  readonly body?: StoredBody | null
  readonly contentType?: string | undefined
  readonly route?: string | undefined
}

/** Normalise a live request as the recording stored requests (redacted, bodies cut at `limit`). */
export async function normaliseRequest(request: LiveRequest, limit: number, redactor: Redactor, match: MatchOptions): Promise<NormalisedRequest> {
  const headers = storeHeaders(request.headers, redactor)
  const capture = request.body instanceof BodyCapture ? request.body : captureBytes(request.body, limit)
  const body = await storeBody(capture, { contentType: headerOf(request.headers, 'content-type'), contentEncoding: headerOf(request.headers, 'content-encoding'), limit, redactor })
  const url = redactor.url(request.url)
  return { ...matchView({ method: request.method, url, headers, body }, match), url, body, contentType: headerOf(headers, 'content-type'), route: request.route }
}
