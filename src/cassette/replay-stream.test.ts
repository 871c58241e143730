import { describe, expect, it } from 'vitest'
import { exchangeAt } from '../../test/helpers/cassette-fixtures.js'
import { ConfigError } from '../errors.js'
import type { StoredClientResponse } from '../engine/schema/cassette.js'
import { checkReplaySpeed, replayEnding, replayPlan } from './replay-stream.js'

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
