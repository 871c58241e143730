/**
 * Store an event stream as the client received it: the body split into its SSE blocks, each
 * redacted on its own, and when each arrived. The stored body is exactly the redacted blocks one
 * after the other, so the block sizes index it; it stays bounded by the body limit.
 *
 * @example
 * const stored = storeEventStream(capture, timeline, { limit: 1 << 20, redactor })
 * // stored.body.data === 'data: {"n":1}\n\n…', stored.stream.events[0] === { at: 0.012, bytes: 15 }
 */
import { roundSeconds } from '../../engine/clock.js'
import type { Redactor } from '../../redact/index.js'
import type { StoredBody, StoredStream, StoredStreamEvent } from './cassette-schema.js'
import type { BodyCapture } from './body-capture.js'
import { asText, cutText } from './store-body.js'
import type { StreamTimeline } from './stream-timeline.js'

export interface StoredEventStream {
  readonly body: StoredBody | null
  readonly stream: StoredStream
}

const EVENT_STREAM = 'text/event-stream'

/**
 * The body and its blocks; null when a block is not UTF-8 text (the body is then stored whole,
 * as any other body, and replays at once).
 */
export function storeEventStream(capture: BodyCapture, timeline: StreamTimeline, options: { limit: number; redactor: Redactor }): StoredEventStream | null {
  const { limit, redactor } = options
  const end = roundSeconds(timeline.end ?? timeline.last)
  if (capture.size === 0) return { body: null, stream: { events: [], end } }
  const bytes = capture.bytes()
  const pieces: Array<{ at: number; bytes: Buffer }> = []
  let start = 0
  for (let i = 0; i < timeline.ends.length; i++) {
    const stop = timeline.ends[i] as number
    if (stop > bytes.length) break
    pieces.push({ at: timeline.times[i] as number, bytes: bytes.subarray(start, stop) })
    start = stop
  }
  // What follows the last complete block: a block the stream broke off in, or bytes the capture cut.
  if (start < bytes.length) pieces.push({ at: timeline.last, bytes: bytes.subarray(start) })

  const events: StoredStreamEvent[] = []
  let data = ''
  let stored = 0
  let truncated = !capture.complete
  for (const [index, piece] of pieces.entries()) {
    const text = asText(piece.bytes, index === pieces.length - 1 && !capture.complete)
    if (text === null) return null
    const redacted = redactor.body(text, EVENT_STREAM)
    const size = Buffer.byteLength(redacted)
    const room = limit - stored
    const kept = size <= room ? redacted : cutText(redacted, room)
    const keptSize = kept === redacted ? size : Buffer.byteLength(kept)
    if (keptSize > 0) {
      events.push({ at: Math.min(roundSeconds(piece.at), end), bytes: keptSize })
      data += kept
      stored += keptSize
    }
    if (kept !== redacted) {
      truncated = true
      break
    }
  }
  const body: StoredBody | null = data === '' && !truncated ? null : { encoding: 'utf8', data, size: capture.size, truncated }
  return { body, stream: { events, end } }
}
