/**
 * What a replayed response carries on the wire: the recorded status and headers, the stored
 * body, and a `content-length` that fits it. A body stored decoded (it was gzip, deflate or br
 * on the wire) is served without its `content-encoding`.
 */
import { validateHeaderName, validateHeaderValue } from 'node:http'
import type { StoredResponse } from '../format/cassette-schema.js'
import { storedBodyBytes } from '../format/store-body.js'

// Framing headers describe the original message, not the replayed one.
const FRAMING = new Set(['content-length', 'transfer-encoding', 'connection', 'keep-alive'])
const NO_BODY_STATUSES = new Set([204, 205, 304])

export interface ReplayedResponse {
  readonly status: number
  readonly headers: Record<string, string | string[]>
  readonly body: Buffer
}

function isValidHeader(name: string, value: string | string[]): boolean {
  try {
    validateHeaderName(name)
    for (const one of Array.isArray(value) ? value : [value]) validateHeaderValue(name, one)
    return true
  } catch {
    return false
  }
}

/** The response to send for a stored one. `complete`: the body is the whole body (not cut short by a recorded failure). */
export function replayedResponse(stored: StoredResponse, options: { complete: boolean; method: string }): ReplayedResponse {
  const body = NO_BODY_STATUSES.has(stored.status) ? Buffer.alloc(0) : storedBodyBytes(stored.body)
  const headers: Record<string, string | string[]> = {}
  for (const [name, value] of Object.entries(stored.headers)) {
    if (FRAMING.has(name) && options.complete) continue
    if (name === 'transfer-encoding' || name === 'connection' || name === 'keep-alive') continue
    // A decoded body is served without its encoding, so the recorded length (of the encoded bytes) no longer describes it.
    if ((name === 'content-encoding' || name === 'content-length') && stored.body?.decoded) continue
    if (isValidHeader(name, value)) headers[name] = value
  }
  if (options.complete && !NO_BODY_STATUSES.has(stored.status)) {
    // A HEAD answer announces the length the GET would have had.
    headers['content-length'] = options.method === 'HEAD' && stored.headers['content-length'] !== undefined && !stored.body ? String(stored.headers['content-length']) : String(body.length)
  }
  return { status: stored.status, headers, body }
}
