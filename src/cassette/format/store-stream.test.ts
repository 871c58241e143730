import { describe, expect, it } from 'vitest'
import { fakeSecrets, leaks } from '../../../test/helpers/fake-secrets.js'
import { VirtualClock } from '../../engine/clock.js'
import { createRedactor } from '../../redact/index.js'
import { MAX_STREAM_EVENTS } from './cassette-schema.js'
import { BodyCapture, REDACTION_MARGIN } from './body-capture.js'
import { storeEventStream } from './store-stream.js'
import { isEventStreamHead, StreamTimeline } from './stream-timeline.js'

const redactor = createRedactor()

/** Feed `chunks` at the given clock times (seconds after the head), then end the body. */
function received(chunks: Array<[number, string | Uint8Array]>, limit = 1024 * 1024, end?: number) {
  const clock = new VirtualClock()
  const capture = new BodyCapture(limit)
  const timeline = new StreamTimeline(clock, limit + REDACTION_MARGIN)
  for (const [at, chunk] of chunks) {
    clock.advance(at - clock.now())
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk
    timeline.push(bytes)
    capture.push(bytes)
  }
  if (end !== undefined) clock.advance(end - clock.now())
  timeline.finish()
  capture.ended = true
  return { capture, timeline }
}

describe('storing an event stream as events', () => {
  it('keeps each block with the time it was complete, however the chunks split it', () => {
    const { capture, timeline } = received(
      [
        [0.01, 'data: {"n":1}\n\n: keep-alive\n\nda'],
        [0.2, 'ta: {"n":2}\n'],
        [0.25, '\ndata: [DONE]\n\n'],
      ],
      1024,
      0.3,
    )
    const stored = storeEventStream(capture, timeline, { limit: 1024, redactor })
    expect(stored?.stream).toEqual({
      events: [
        { at: 0.01, bytes: 15 },
        { at: 0.01, bytes: 14 },
        { at: 0.25, bytes: 15 },
        { at: 0.25, bytes: 14 },
      ],
      end: 0.3,
    })
    expect(stored?.body).toEqual({ encoding: 'utf8', data: 'data: {"n":1}\n\n: keep-alive\n\ndata: {"n":2}\n\ndata: [DONE]\n\n', size: 58, truncated: false })
  })

  it('redacts each event on its own, and the sizes index the redacted body', () => {
    const secrets = fakeSecrets()
    const { capture, timeline } = received([
      [0, `data: {"api_key":"${secrets.session}","n":1}\n\n`],
      [0.1, `data: {"text":"use ${secrets.openai} now"}\n\n`],
    ])
    const stored = storeEventStream(capture, timeline, { limit: 1024 * 1024, redactor })!
    const body = stored.body!.data
    expect(leaks(body, secrets)).toEqual([])
    expect(body).toBe('data: {"api_key":"[REDACTED]","n":1}\n\ndata: {"text":"use [REDACTED] now"}\n\n')
    const [first, second] = stored.stream.events
    expect(Buffer.from(body).subarray(0, first!.bytes).toString()).toBe('data: {"api_key":"[REDACTED]","n":1}\n\n')
    expect(first!.bytes + second!.bytes).toBe(Buffer.byteLength(body))
  })

  it('keeps a block the stream broke off in, and cuts at the body limit on a character boundary', () => {
    const cut = received([
      [0, 'data: 1\n\n'],
      [0.05, 'data: hal'],
    ])
    expect(storeEventStream(cut.capture, cut.timeline, { limit: 1024, redactor })?.stream.events).toEqual([
      { at: 0, bytes: 9 },
      { at: 0.05, bytes: 9 },
    ])
    const long = received([
      [0, 'data: ééé\n\n'],
      [0.1, 'data: 2\n\n'],
    ])
    // 11 bytes end inside the third é: the stored body stops before it.
    const stored = storeEventStream(long.capture, long.timeline, { limit: 11, redactor })
    expect(stored?.body).toMatchObject({ data: 'data: éé', truncated: true, size: 23 })
    expect(stored?.stream.events).toEqual([{ at: 0, bytes: 10 }])
  })

  it('keeps at most MAX_STREAM_EVENTS events apart, and what follows them as one more', () => {
    const many = received([[0, 'data: x\n\n'.repeat(MAX_STREAM_EVENTS + 2)]], 4 * 1024 * 1024)
    const events = storeEventStream(many.capture, many.timeline, { limit: 4 * 1024 * 1024, redactor })!.stream.events
    expect(events).toHaveLength(MAX_STREAM_EVENTS + 1)
    expect(events.at(-1)).toEqual({ at: 0, bytes: 18 })
    // 100k events: about 1 s alone, several on a loaded CI machine; the unit project's 5 s is too tight.
  }, 30_000)

  it('gives up on a stream that is not UTF-8 text, and stores an empty one as events without a body', () => {
    const binary = received([[0, new Uint8Array([0x64, 0x61, 0xff, 0x0a, 0x0a])]])
    expect(storeEventStream(binary.capture, binary.timeline, { limit: 1024, redactor })).toBeNull()
    const empty = received([], 1024, 0.7)
    expect(storeEventStream(empty.capture, empty.timeline, { limit: 1024, redactor })).toEqual({ body: null, stream: { events: [], end: 0.7 } })
  })

  it('recognises an event stream head only when its blocks can be read', () => {
    expect(isEventStreamHead('POST', 200, { 'content-type': 'text/event-stream; charset=utf-8' })).toBe(true)
    expect(isEventStreamHead('POST', 200, { 'content-type': 'text/event-stream', 'content-encoding': 'gzip' })).toBe(false)
    expect(isEventStreamHead('HEAD', 200, { 'content-type': 'text/event-stream' })).toBe(false)
    expect(isEventStreamHead('GET', 204, { 'content-type': 'text/event-stream' })).toBe(false)
    expect(isEventStreamHead('GET', 200, { 'content-type': 'application/json' })).toBe(false)
  })
})
