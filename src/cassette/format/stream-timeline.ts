/**
 * When each block of an event stream reached the client, found as the chunks pass: the byte
 * offset where each SSE block (an event or a comment) ends, and the time it was complete. It
 * holds no body bytes (a `BodyCapture` keeps those) and stops noting blocks past the bytes the
 * capture keeps and past `MAX_STREAM_EVENTS` blocks (the rest is stored as one more piece), so
 * its memory is bounded like the capture's.
 */
import type { Clock } from '../../engine/clock.js'
import type { HeaderMap } from '../../engine/http.js'
import { MAX_STREAM_EVENTS } from './cassette-schema.js'
import { SseDecoder } from '../../engine/streams/sse-decoder.js'

export class StreamTimeline {
  readonly #clock: Clock
  /** Clock seconds when the response head was sent. */
  readonly #head: number
  /** Offsets past this are not noted (the capture keeps no bytes there). */
  readonly #cap: number
  readonly #decoder: SseDecoder
  /** Body bytes seen before the current chunk. */
  #offset = 0
  #now = 0
  /** The offset just past each complete block, in order. */
  readonly ends: number[] = []
  /** Seconds from the head at which each block was complete. */
  readonly times: number[] = []
  /** Seconds from the head to the latest chunk. */
  last = 0
  /** Seconds from the head to the end of the body (null while it flows). */
  end: number | null = null

  /** `cap`: bytes the body capture keeps (blocks ending beyond are not noted). */
  constructor(clock: Clock, cap: number) {
    this.#clock = clock
    this.#head = clock.now()
    this.#cap = cap
    this.#decoder = new SseDecoder({
      blockEnd: (end) => {
        const at = this.#offset + end
        if (at > this.#cap || this.ends.length >= MAX_STREAM_EVENTS) return
        this.ends.push(at)
        this.times.push(this.#now)
      },
    })
  }

  push(chunk: Uint8Array): void {
    if (this.end !== null) return
    this.#now = Math.max(0, this.#clock.now() - this.#head)
    this.last = this.#now
    if (this.#offset <= this.#cap) this.#decoder.push(chunk)
    this.#offset += chunk.length
  }

  /** The body ended, broke off, or the client left. */
  finish(): void {
    if (this.end === null) this.end = Math.max(this.last, this.#clock.now() - this.#head)
  }
}

function headerText(headers: HeaderMap, name: string): string {
  const value = headers[name]
  return (Array.isArray(value) ? value.join(', ') : value ?? '').trim().toLowerCase()
}

/**
 * Whether a response head announces an event stream whose blocks can be read on the wire:
 * `text/event-stream` without a content encoding (model providers do not compress streams).
 */
export function isEventStreamHead(method: string, status: number, headers: HeaderMap): boolean {
  if (method === 'HEAD' || status < 200 || status === 204 || status === 205 || status === 304) return false
  const encoding = headerText(headers, 'content-encoding')
  return headerText(headers, 'content-type').startsWith('text/event-stream') && (encoding === '' || encoding === 'identity')
}
