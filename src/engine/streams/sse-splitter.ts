/**
 * Split an SSE byte stream into its blocks (one event, or a comment, each with the blank line that
 * ends it), exactly as the upstream sent them, so a stream fault can count, hold, delay or drop
 * whole events. Only the block in progress is held, and never more than `MAX_HELD_BYTES`: a
 * longer block comes out in pieces.
 *
 * @note A block is complete as soon as its blank line is: when a CRLF is split between two
 * chunks, the block ends at the CR and its LF starts the next block's bytes (clients read a CR
 * followed by a LF as one line break, so they see the same events).
 */
import { SseDecoder } from './sse-decoder.js'

/** A block larger than this is passed on in pieces rather than held whole. */
export const MAX_HELD_BYTES = 4 * 1024 * 1024
/** How much of an event's data is kept to recognise it. */
const DATA_HEAD_BYTES = 256

/**
 * Whether an event, by its `event:` name and the first bytes of its data, ends its stream (a model
 * provider's `[DONE]` or `message_stop`). SSE itself has no final event: a plug-in says
 * (`ExchangePlugin.isFinalEvent`, the model-calls plug-in's src/model-calls/terminal-event.ts).
 */
export type FinalEventTest = (event: string | null, dataHead: string) => boolean

/** What is known about a block. */
export interface SseBlockInfo {
  /** Whether a client dispatches it as an event (it has a `data:` field), as far as it arrived. */
  readonly dispatches: boolean
  /** Its `event:` name, when it has one. */
  readonly event: string | null
  /** Whether it is a stream's final event, as the reader's `FinalEventTest` says (false without one). */
  readonly terminal: boolean
}

export interface SsePiece extends SseBlockInfo {
  /** The bytes, exactly as the upstream sent them. */
  readonly bytes: Uint8Array
  /** Whether these bytes end their block (its blank line included). */
  readonly complete: boolean
}

/** Reads what each block is (dispatched, its event name, final or not) as its bytes pass, holding none of them. */
export class SseBlockReader {
  readonly #decoder: SseDecoder
  readonly #isFinal: FinalEventTest | undefined
  #dispatches = false
  #event: string | null = null
  #dataHead: number[] = []

  /** `onBlockEnd` hears each block as its blank line passes: where it ends in the current chunk, and what it was. */
  constructor(onBlockEnd: (end: number, info: SseBlockInfo) => void, isFinal?: FinalEventTest) {
    this.#isFinal = isFinal
    this.#decoder = new SseDecoder({
      dataLine: () => {
        this.#dispatches = true
      },
      data: (fragment) => {
        if (!isFinal) return
        for (let i = 0; i < fragment.length && this.#dataHead.length < DATA_HEAD_BYTES; i++) this.#dataHead.push(fragment[i] as number)
      },
      event: (name) => {
        this.#event = name
      },
      blockEnd: (end) => {
        onBlockEnd(end, this.current())
        this.#dispatches = false
        this.#event = null
        this.#dataHead = []
      },
    })
  }

  push(chunk: Uint8Array): void {
    this.#decoder.push(chunk)
  }

  /** What the block in progress is, as far as it arrived. */
  current(): SseBlockInfo {
    return { dispatches: this.#dispatches, event: this.#event, terminal: this.#dispatches && this.#isFinal !== undefined && this.#isFinal(this.#event, Buffer.from(this.#dataHead).toString('utf8')) }
  }
}

export class SseSplitter {
  readonly #blocks: SseBlockReader
  #held: Uint8Array[] = []
  #heldBytes = 0
  /** Blocks the current chunk completed: where each ends, and what it was. */
  #ended: Array<{ end: number; info: SseBlockInfo }> = []

  /** `isFinal`: which events end the stream (pieces' `terminal`); without it, none does. */
  constructor(isFinal?: FinalEventTest) {
    this.#blocks = new SseBlockReader((end, info) => this.#ended.push({ end, info }), isFinal)
  }

  /** The pieces this chunk completes (or, for an oversized block, passes on). */
  push(chunk: Uint8Array): SsePiece[] {
    this.#ended = []
    this.#blocks.push(chunk)
    const pieces: SsePiece[] = []
    let position = 0
    for (const { end, info } of this.#ended) {
      pieces.push({ ...info, bytes: this.#take(chunk.subarray(position, end)), complete: true })
      position = end
    }
    if (position < chunk.length) {
      this.#held.push(chunk.subarray(position))
      this.#heldBytes += chunk.length - position
      if (this.#heldBytes > MAX_HELD_BYTES) pieces.push({ ...this.#blocks.current(), bytes: this.#take(EMPTY), complete: false })
    }
    return pieces
  }

  /** The upstream ended: what is left of an unfinished block, if anything. */
  flush(): SsePiece | null {
    return this.#heldBytes > 0 ? { ...this.#blocks.current(), bytes: this.#take(EMPTY), complete: false } : null
  }

  /** The held bytes followed by `tail`, as one array; the hold is emptied. */
  #take(tail: Uint8Array): Uint8Array {
    if (this.#held.length === 0) return tail
    const out = new Uint8Array(this.#heldBytes + tail.length)
    let offset = 0
    for (const part of this.#held) {
      out.set(part, offset)
      offset += part.length
    }
    out.set(tail, offset)
    this.#held = []
    this.#heldBytes = 0
    return out
  }
}

const EMPTY = new Uint8Array(0)
