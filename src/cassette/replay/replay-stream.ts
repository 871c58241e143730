/**
 * How a recorded response body is played back, shared by the replay server and in-process
 * replay: the pieces to send (one per recorded event for an event stream, else the body in one
 * piece), when each is due, and how the body ends, as the client saw it when it was recorded.
 *
 * | recorded                                       | ending  | the client sees                        |
 * |------------------------------------------------|---------|----------------------------------------|
 * | `response`                                     | `end`   | a complete body                        |
 * | `response` whose body was cut at the body limit | `cut`  | the stored prefix, then the connection closes mid-body |
 * | `error` with `STREAM_CUT` (cut, truncate, stall with a delay) | `cut` | the connection closes without the terminal chunk |
 * | `error`, any other code (the upstream broke off) | `reset` | a connection reset after the bytes     |
 * | `cancelled` (the client gave up, a stall)      | `hold`  | nothing more until it gives up again   |
 *
 * @example
 * const plan = replayPlan(exchange, body, 'recorded')
 * const due = pacer()
 * for (const piece of plan.pieces) { await due(piece.at, signal); write(piece.bytes) }
 */
import { ConfigError } from '../../errors.js'
import type { CassetteExchange, StoredClientResponse } from '../format/cassette-schema.js'

/** `instant` (default): every piece at once. `recorded`: each event when it arrived, relative to the head. */
export type ReplaySpeed = 'instant' | 'recorded'
export const REPLAY_SPEEDS: readonly ReplaySpeed[] = ['instant', 'recorded']

export type ReplayEnding = 'end' | 'cut' | 'reset' | 'hold'

export interface ReplayPiece {
  /** Seconds from the head at which it is due (0 at instant speed). */
  readonly at: number
  readonly bytes: Buffer
}

export interface ReplayPlan {
  readonly pieces: readonly ReplayPiece[]
  /** Seconds from the head at which the body ends as `ending` says (0 at instant speed). */
  readonly end: number
  readonly ending: ReplayEnding
  /** The body was recorded event by event: it is sent without a content length, piece by piece. */
  readonly streamed: boolean
}

/** The error code of a stream cut: the connection closed without the terminal chunk. */
const STREAM_CUT = 'STREAM_CUT'

/** Refuse an unknown speed with the allowed ones. */
export function checkReplaySpeed(speed: unknown): ReplaySpeed {
  if (speed === undefined) return 'instant'
  if (REPLAY_SPEEDS.includes(speed as ReplaySpeed)) return speed as ReplaySpeed
  throw new ConfigError(`Failed to start the replay: unknown speed ${JSON.stringify(speed)}. Use one of: ${REPLAY_SPEEDS.join(', ')}.`, { code: 'ERR_USAGE' })
}

/** How an exchange's body ends for the client (a recorded reset has no body: see `outcome`). */
export function replayEnding(exchange: CassetteExchange): ReplayEnding {
  switch (exchange.outcome) {
    case 'response':
      // A body cut at the body limit is never passed off as whole: it breaks off where the stored prefix ends.
      return exchange.response?.body?.truncated ? 'cut' : 'end'
    case 'cancelled':
      return 'hold'
    case 'error':
      return exchange.error === STREAM_CUT ? 'cut' : 'reset'
    case 'reset':
      return 'reset'
  }
}

/** The pieces of `body` (the bytes the replayed response carries) and their timing. */
export function replayPlan(exchange: CassetteExchange, response: StoredClientResponse, body: Buffer, speed: ReplaySpeed): ReplayPlan {
  const ending = replayEnding(exchange)
  const stream = response.stream
  if (!stream) return { pieces: body.length ? [{ at: 0, bytes: body }] : [], end: 0, ending, streamed: false }
  const recorded = speed === 'recorded'
  const pieces: ReplayPiece[] = []
  let offset = 0
  for (const event of stream.events) {
    if (offset >= body.length) break
    pieces.push({ at: recorded ? event.at : 0, bytes: body.subarray(offset, offset + event.bytes) })
    offset += event.bytes
  }
  if (offset < body.length) pieces.push({ at: recorded ? stream.end : 0, bytes: body.subarray(offset) })
  return { pieces, end: recorded ? stream.end : 0, ending, streamed: true }
}

/**
 * Wait until `seconds` after `startedMs` (a `performance.now()` reading); resolves at once when
 * that moment has passed, and as soon as `signal` aborts (the client left).
 */
export function untilDue(startedMs: number, seconds: number, signal: AbortSignal): Promise<void> {
  const waitMs = startedMs + seconds * 1000 - performance.now()
  if (waitMs <= 0 || signal.aborted) return Promise.resolve()
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer)
      signal.removeEventListener('abort', done)
      resolve()
    }
    const timer = setTimeout(done, waitMs)
    signal.addEventListener('abort', done, { once: true })
  })
}

/**
 * Waits for moments given in seconds from the head (`replayPlan`'s `at` and `end`). A moment
 * reached late (a busy event loop) moves the later ones by as much: the recorded gaps between
 * events are kept, never shortened to catch up (a client's per-event timeout sees what it saw).
 */
export function pacer(): (seconds: number, signal: AbortSignal) => Promise<void> {
  let origin = performance.now()
  return async (seconds, signal) => {
    await untilDue(origin, seconds, signal)
    const late = performance.now() - (origin + seconds * 1000)
    if (late > 0) origin += late
  }
}
