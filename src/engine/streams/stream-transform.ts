/**
 * The unit a stream fault hands to the exchange flow: a stateful, transport-agnostic transform
 * fed the upstream body chunk by chunk. For each chunk it says what the client gets (with
 * optional waits on the storm's clock) and what happens next. `stream-relay.ts` drives it.
 */

import type { CutAt } from './deltas.js'

/** What to do after sending a step's bytes. */
export type StreamNext =
  /** Read the next upstream chunk. */
  | 'continue'
  /** End the body cleanly (the client sees a complete response). */
  | 'end'
  /** Close the connection without ending the body: the client sees its own "terminated" error. */
  | 'abort'
  /** Reset the connection. */
  | 'reset'
  /** Send nothing more and hold the connection open (until the client leaves, or `holdSeconds`). */
  | 'stall'

export interface StreamPiece {
  readonly bytes: Uint8Array
  /** Seconds to wait before sending these bytes, on the storm's clock. */
  readonly delay?: number
}

export interface StreamStep {
  /** What the client gets now, in order. */
  readonly send: readonly StreamPiece[]
  readonly next: StreamNext
  /** For `stall`: close the connection (as `abort`) after this many seconds; absent or 0: hold until the client leaves. */
  readonly holdSeconds?: number
}

export interface StreamTransform {
  /** An upstream body chunk arrived. */
  push(chunk: Uint8Array): StreamStep
  /** The upstream body ended cleanly. A `continue` here means `end`. */
  finish(): StreamStep
  /** Whether the client's stream differs from the upstream's so far: the fault counts as triggered. */
  readonly changed: boolean
  /** Whether the client misses part of what the upstream sent (the call record then says where: `cut`). */
  readonly truncated: boolean
  /** Complete SSE events delivered so far; null when the transform does not count events. */
  readonly events: number | null
  /**
   * The head's `content-length` is kept: the body is the recorded one and breaks off before that
   * length (a replayed cut), so the client sees the length it was promised and fewer bytes.
   * Absent: the length no longer holds and is dropped.
   */
  readonly keepsLength?: boolean
  /** Why the fault did not act on this stream, when it did not (the call record's `notFired`). */
  readonly notFired?: string | null
  /** Where a cut inside model deltas fell (the call record's `cut.at`, `cut.deltas`). */
  readonly cutAt?: CutAt | null
}
