import { describe, expect, it } from 'vitest'
import { exchangeAt } from '../../../test/helpers/cassette-fixtures.js'
import { ConfigError } from '../../errors.js'
import type { StoredClientResponse } from '../format/cassette-schema.js'
import { checkReplaySpeed, pacer, replayEnding, replayPlan } from './replay-stream.js'

const streamed: StoredClientResponse = {
  status: 200,
  headers: { 'content-type': 'text/event-stream' },
  body: { encoding: 'utf8', data: 'data: 1\n\ndata: 2\n\n', size: 18, truncated: false },
  stream: {
    events: [
      { at: 0.1, bytes: 9 },
      { at: 0.3, bytes: 9 },
    ],
    end: 0.5,
  },
}
const body = Buffer.from('data: 1\n\ndata: 2\n\n')

describe('replay plans', () => {
  it('plays a recorded stream event by event, at once or at the recorded times', () => {
    const exchange = exchangeAt(1, { response: streamed })
    const pieces = (speed: 'instant' | 'recorded') => replayPlan(exchange, streamed, body, speed).pieces.map((piece) => [piece.at, piece.bytes.toString()])
    expect(pieces('instant')).toEqual([
      [0, 'data: 1\n\n'],
      [0, 'data: 2\n\n'],
    ])
    expect(pieces('recorded')).toEqual([
      [0.1, 'data: 1\n\n'],
      [0.3, 'data: 2\n\n'],
    ])
    expect(replayPlan(exchange, streamed, body, 'recorded')).toMatchObject({ end: 0.5, ending: 'end', streamed: true })
  })

  it('plays any other body in one piece', () => {
    const exchange = exchangeAt(1)
    expect(replayPlan(exchange, exchange.response!, Buffer.from('{"id":1}'), 'recorded')).toMatchObject({ pieces: [{ at: 0 }], end: 0, streamed: false })
  })

  it('ends the body as the client saw it end', () => {
    expect(replayEnding(exchangeAt(1))).toBe('end')
    expect(replayEnding(exchangeAt(1, { outcome: 'error', error: 'STREAM_CUT' }))).toBe('cut')
    expect(replayEnding(exchangeAt(1, { outcome: 'error', error: 'ECONNRESET' }))).toBe('reset')
    expect(replayEnding(exchangeAt(1, { outcome: 'cancelled', error: 'CLIENT_ABORTED' }))).toBe('hold')
  })

  it('refuses an unknown speed, naming the allowed ones', () => {
    expect(checkReplaySpeed(undefined)).toBe('instant')
    expect(() => checkReplaySpeed('fast')).toThrow(ConfigError)
    expect(() => checkReplaySpeed('fast')).toThrow('Failed to start the replay: unknown speed "fast". Use one of: instant, recorded.')
  })
})

describe('pacer', () => {
  it('keeps the recorded gap after a moment reached late, instead of catching up', async () => {
    const due = pacer()
    const signal = new AbortController().signal
    // The event loop is busy for 60 ms before the first piece, due at 10 ms (a loaded machine).
    const busyUntil = performance.now() + 60
    while (performance.now() < busyUntil) {
      // Spin.
    }
    await due(0.01, signal)
    const first = performance.now()
    await due(0.06, signal)
    // The second piece follows the first by the recorded 50 ms, not at 60 ms from the head (passed already).
    expect(performance.now() - first).toBeGreaterThanOrEqual(45)
  })

  it('waits until each moment, counted from the head', async () => {
    const due = pacer()
    const started = performance.now()
    await due(0.03, new AbortController().signal)
    expect(performance.now() - started).toBeGreaterThanOrEqual(25)
    await due(0.06, new AbortController().signal)
    expect(performance.now() - started).toBeGreaterThanOrEqual(55)
  })
})
