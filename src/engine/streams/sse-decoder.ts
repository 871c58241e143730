/**
 * An incremental Server-Sent Events decoder over raw bytes: it finds field lines and the blank
 * lines that end events, across any chunk boundaries, and never holds more than a few hundred
 * bytes of its own. What it sees is reported through a handler; callers decide what to keep.
 *
 * @note Hand-written rather than taken from an SDK: the fault machinery must know the byte offset
 * where each event ends (to cut exactly there), and model-call metadata must stream `data:`
 * values without holding whole events in memory. SSE parsers in libraries yield decoded events.
 * @see https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation
 */

const LF = 0x0a
const CR = 0x0d
const COLON = 0x3a
const SPACE = 0x20

/** Field names longer than this are none we know. */
const MAX_FIELD_NAME = 8
/** `event:` values are kept up to this many bytes. */
const MAX_EVENT_NAME = 128

export interface SseHandler {
  /** A `data:` field began (an event with a data field is dispatched, even when its data is empty). */
  dataLine?(): void
  /** A piece of a `data:` value. A `\n` fragment separates the data lines of one event. */
  data?(fragment: Uint8Array): void
  /** An `event:` value, when its line ends (at most 128 bytes). */
  event?(name: string): void
  /** A blank line ended a block. `end` is the index just past it in the current chunk. */
  blockEnd(end: number): void
}

type Field = 'none' | 'data' | 'event' | 'other'

export class SseDecoder {
  readonly #handler: SseHandler
  /** The previous byte was a CR: a LF right after it belongs to the same line break. */
  #afterCr = false
  /** Nothing but the line break has been seen on the current line. */
  #lineEmpty = true
  #name = ''
  #inValue = false
  #field: Field = 'none'
  /** The one optional space after the colon is not part of the value. */
  #skipSpace = false
  #eventName: number[] = []
  #dataLines = 0
  /** Bytes seen at the very start of the stream, while they may still be a byte order mark. */
  #bomSeen = 0

  constructor(handler: SseHandler) {
    this.#handler = handler
  }

  push(chunk: Uint8Array): void {
    let i = 0
    // A UTF-8 byte order mark at the very start is not part of the first field name.
    while (this.#bomSeen < BOM.length && i < chunk.length) {
      if (chunk[i] !== BOM[this.#bomSeen]) {
        this.#bomSeen = BOM.length
        break
      }
      this.#bomSeen++
      i++
    }
    let valueStart = this.#inValue && this.#field === 'data' ? i : -1
    for (; i < chunk.length; i++) {
      const byte = chunk[i] as number
      if (byte === LF || byte === CR) {
        if (byte === LF && this.#afterCr) {
          this.#afterCr = false
          continue
        }
        this.#afterCr = byte === CR
        if (valueStart >= 0 && i > valueStart) this.#handler.data?.(chunk.subarray(valueStart, i))
        valueStart = -1
        if (this.#lineEmpty) {
          // A blank line: the block ends after its line break (both bytes of a CRLF when both are here).
          const end = byte === CR && chunk[i + 1] === LF ? i + 2 : i + 1
          this.#endBlock()
          this.#handler.blockEnd(end)
          if (end === i + 2) {
            this.#afterCr = false
            i++
          }
        } else {
          this.#endLine()
        }
        continue
      }
      this.#afterCr = false
      this.#lineEmpty = false
      if (!this.#inValue) {
        if (byte === COLON) {
          this.#startValue()
          valueStart = -1
          if (this.#field === 'data') valueStart = i + 1
          continue
        }
        if (this.#name.length <= MAX_FIELD_NAME) this.#name += String.fromCharCode(byte)
        continue
      }
      if (this.#skipSpace) {
        this.#skipSpace = false
        if (byte === SPACE) {
          if (valueStart === i) valueStart = i + 1
          continue
        }
      }
      if (this.#field === 'event' && this.#eventName.length < MAX_EVENT_NAME) this.#eventName.push(byte)
    }
    if (valueStart >= 0 && chunk.length > valueStart) this.#handler.data?.(chunk.subarray(valueStart))
  }

  #startValue(): void {
    this.#inValue = true
    this.#skipSpace = true
    this.#field = this.#name === 'data' ? 'data' : this.#name === 'event' ? 'event' : 'other'
    if (this.#field === 'data') {
      this.#handler.dataLine?.()
      if (this.#dataLines > 0) this.#handler.data?.(NEWLINE)
      this.#dataLines++
    }
  }

  #endLine(): void {
    // A line without a colon is a field with an empty value.
    if (!this.#inValue) this.#startValue()
    if (this.#field === 'event') this.#handler.event?.(Buffer.from(this.#eventName).toString('utf8'))
    this.#resetLine()
  }

  #endBlock(): void {
    this.#dataLines = 0
    this.#resetLine()
  }

  #resetLine(): void {
    this.#lineEmpty = true
    this.#name = ''
    this.#inValue = false
    this.#field = 'none'
    this.#skipSpace = false
    this.#eventName = []
  }
}

const NEWLINE = new Uint8Array([LF])
const BOM = [0xef, 0xbb, 0xbf]
