/**
 * A stream transform that acts on whole SSE events: `rule` decides for each block (an event or
 * a comment, or a piece of an oversized one) whether it is sent, held back a while, dropped, or
 * whether the stream stops there. Blocks go out as soon as they are complete.
 */
import { type FinalEventTest, SseSplitter, type SsePiece } from './sse-splitter.js'
import type { CutAt } from './deltas.js'
export type { CutAt } from './deltas.js'
import type { StreamPiece, StreamStep, StreamTransform } from './stream-transform.js'

/** `replace`: send these complete events instead (a duplicated or rewritten event). */
export type PieceAction = 'send' | 'drop' | 'stop' | { readonly delay: number } | { readonly replace: readonly Uint8Array[] }

export interface EventRule {
  /** What to do with `piece`; `events` counts the events sent so far. */
  decide(piece: SsePiece, events: number): PieceAction
  /** How the stream stops on a `stop`. */
  readonly stop: 'abort' | 'stall' | 'reset'
  /** For `stall`: seconds to hold before closing; 0 holds until the client leaves. */
  readonly holdSeconds?: number
  /** Why the fault has not acted (yet), for the call record; null once it did. */
  notFired?(): string | null
  /** For a cut inside model deltas: which kind, and how many of them the client got. */
  cutAt?(): CutAt | null
}

export class EventTransform implements StreamTransform {
  readonly #rule: EventRule
  readonly #splitter: SseSplitter
  #events = 0
  #changed = false
  #dropped = false

  /** `isFinal`: which events end the stream, for a rule that decides on `piece.terminal`. */
  constructor(rule: EventRule, isFinal?: FinalEventTest) {
    this.#rule = rule
    this.#splitter = new SseSplitter(isFinal)
  }

  get changed(): boolean {
    return this.#changed
  }

  get truncated(): boolean {
    return this.#dropped
  }

  get events(): number {
    return this.#events
  }

  get notFired(): string | null {
    return this.#changed ? null : (this.#rule.notFired?.() ?? null)
  }

  get cutAt(): CutAt | null {
    return this.#dropped ? (this.#rule.cutAt?.() ?? null) : null
  }

  push(chunk: Uint8Array): StreamStep {
    return this.#step(this.#splitter.push(chunk), 'continue')
  }

  finish(): StreamStep {
    const rest = this.#splitter.flush()
    return this.#step(rest ? [rest] : [], 'end')
  }

  #step(pieces: readonly SsePiece[], next: 'continue' | 'end'): StreamStep {
    const send: StreamPiece[] = []
    for (const piece of pieces) {
      const action = this.#rule.decide(piece, this.#events)
      if (action === 'stop') {
        this.#changed = true
        this.#dropped = true
        const stop = this.#rule.stop
        return stop === 'stall' && this.#rule.holdSeconds ? { send, next: stop, holdSeconds: this.#rule.holdSeconds } : { send, next: stop }
      }
      if (action === 'drop') {
        this.#changed = true
        this.#dropped = true
        continue
      }
      if (action === 'send') send.push({ bytes: piece.bytes })
      else if ('replace' in action) {
        this.#changed = true
        for (const bytes of action.replace) send.push({ bytes })
        if (piece.complete && piece.dispatches) this.#events += action.replace.length
        continue
      } else {
        if (action.delay > 0) this.#changed = true
        send.push({ bytes: piece.bytes, delay: action.delay })
      }
      if (piece.complete && piece.dispatches) this.#events++
    }
    return { send, next }
  }
}
