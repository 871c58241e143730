import { describe, expect, it } from 'vitest'
import { RealClock } from '../clock.js'
import type { Fault, FaultContext } from '../faults/fault.js'
import { faultFor, ruleSchema } from '../../default-faults.js'
import { isTerminalEvent } from '../../model-calls/terminal-event.js'
import type { StreamNext, StreamTransform } from './stream-transform.js'

const SSE = { 'content-type': 'text/event-stream' }
const EVENTS = ['data: {"n":1}\n\n', ': ping\n\n', 'data: {"n":2}\n\n', 'data: {"n":3}\n\n', 'data: [DONE]\n\n']
const STREAM = EVENTS.join('')

/** The transform a stream fault hands the flow for a response with these headers. */
async function transformFor(kind: string, fields: Record<string, unknown> = {}, headers: Record<string, string> = SSE): Promise<StreamTransform | null> {
  const rule = ruleSchema.parse({ name: 'r', route: '*', kind, ...fields })
  const fault = faultFor(kind) as Fault
  const ctx: FaultContext = { rule, seed: 0, route: 'GET /s', key: '#1', clock: new RealClock(), signal: new AbortController().signal, request: { method: 'GET', url: 'http://t/s', headers: {} }, response: { status: 200, headers, readBody: () => Promise.reject(new Error('stream faults never buffer')) }, protocol: { isFinalEvent: isTerminalEvent } }
  const { action, injected } = await fault.apply(ctx)
  expect(injected).toBe(false)
  return action.type === 'stream' ? action.transform : null
}

/** Run a transform over `text` cut at `at`, collecting what the client gets and how it ends. */
function run(transform: StreamTransform, text: string, at: number): { sent: string; next: StreamNext; delays: number[] } {
  const bytes = Buffer.from(text)
  let sent = ''
  const delays: number[] = []
  for (const chunk of [bytes.subarray(0, at), bytes.subarray(at)]) {
    const step = transform.push(chunk)
    for (const piece of step.send) {
      sent += Buffer.from(piece.bytes).toString()
      if (piece.delay) delays.push(piece.delay)
    }
    if (step.next !== 'continue') return { sent, next: step.next, delays }
  }
  const step = transform.finish()
  for (const piece of step.send) sent += Buffer.from(piece.bytes).toString()
  return { sent, next: step.next === 'continue' ? 'end' : step.next, delays }
}

describe('stream transforms', () => {
  it('cut after `after` events once more bytes arrive, wherever the chunks split', async () => {
    for (let at = 0; at <= STREAM.length; at++) {
      const transform = (await transformFor('stream_cut', { after: 2 }))!
      const result = run(transform, STREAM, at)
      expect(result).toEqual({ sent: EVENTS.slice(0, 3).join(''), next: 'abort', delays: [] })
      expect([transform.changed, transform.truncated, transform.events]).toEqual([true, true, 2])
    }
  })

  it('end cleanly without triggering when the stream ends at the cut point', async () => {
    const transform = (await transformFor('stream_cut', { after: 4 }))!
    expect(run(transform, STREAM, 10)).toEqual({ sent: STREAM, next: 'end', delays: [] })
    expect(transform.changed).toBe(false)
  })

  it('stall instead of cutting, holding for `delay` seconds when given', async () => {
    const transform = (await transformFor('stream_stall', { after: 1, delay: 2 }))!
    const step = transform.push(Buffer.from(STREAM))
    expect(step).toMatchObject({ next: 'stall', holdSeconds: 2 })
    // Anything past the first event stops it, a keep-alive comment included.
    expect(step.send.map((piece) => Buffer.from(piece.bytes).toString()).join('')).toBe(EVENTS[0])
  })

  it('drop only the terminal event and end cleanly', async () => {
    for (let at = 0; at <= STREAM.length; at++) {
      const transform = (await transformFor('drop_terminal'))!
      expect(run(transform, STREAM, at)).toEqual({ sent: EVENTS.slice(0, 4).join(''), next: 'end', delays: [] })
      expect([transform.changed, transform.events]).toEqual([true, 3])
    }
  })

  it('delay every event after the first, not comments', async () => {
    const transform = (await transformFor('slow_stream', { delay: 0.25 }))!
    expect(run(transform, STREAM, 3)).toEqual({ sent: STREAM, next: 'end', delays: [0.25, 0.25, 0.25] })
    expect([transform.changed, transform.truncated]).toEqual([true, false])
  })

  it('truncate a body after `after` bytes, wherever the chunks split', async () => {
    for (let at = 0; at <= 40; at++) {
      const transform = (await transformFor('truncate', { after: 17 }, { 'content-type': 'text/plain' }))!
      expect(run(transform, 'x'.repeat(40), at)).toEqual({ sent: 'x'.repeat(17), next: 'abort', delays: [] })
      expect([transform.changed, transform.events]).toEqual([true, null])
    }
  })

  it('leave a body that is not an event stream to the SSE kinds, and compressed event streams too', async () => {
    for (const kind of ['stream_cut', 'stream_stall', 'drop_terminal', 'slow_stream']) {
      expect(await transformFor(kind, {}, { 'content-type': 'application/json' })).toBeNull()
      expect(await transformFor(kind, {}, { ...SSE, 'content-encoding': 'gzip' })).toBeNull()
    }
  })

  it('explain each stream fault in one phrase', () => {
    const explain = (fields: Record<string, unknown>) => faultFor(fields.kind as string).explain(ruleSchema.parse({ name: 'r', route: '*', ...fields }) as never)
    expect(explain({ kind: 'stream_cut', after: 3 })).toBe('close the event stream after 3 event(s), without its final event')
    expect(explain({ kind: 'stream_stall', after: 1 })).toBe('stop the event stream after 1 event(s) and hold the connection until the client gives up')
    expect(explain({ kind: 'stream_stall', after: 1, delay: 5 })).toBe('stop the event stream after 1 event(s) and hold the connection 5s, then close it')
    expect(explain({ kind: 'drop_terminal' })).toBe('deliver the event stream without its final event ([DONE], message_stop, response.completed)')
    expect(explain({ kind: 'slow_stream', delay: 0.2 })).toBe('delay every event of the stream after the first by 0.2s')
    expect(explain({ kind: 'truncate', after: 1024 })).toBe('close the connection after 1024 byte(s) of the response body')
  })
})
