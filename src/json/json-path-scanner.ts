/**
 * Pick a few scalar values out of a JSON text as it streams by, without parsing or holding the
 * document: `usage.prompt_tokens` from a 2 MB completion costs a pass over its bytes and a few
 * hundred bytes of state. Only the values at the wanted paths are ever decoded, so prompts and
 * outputs are skipped, never kept.
 *
 * Paths join object keys with dots; array elements add a `[]` segment (`choices.[].index`).
 * The scanner is lenient: it does not validate, and malformed input yields fewer values, never
 * an error.
 */

export type JsonScalar = string | number | boolean | null

const QUOTE = 0x22
const BACKSLASH = 0x5c
/** Deeper documents are not followed further. */
const MAX_DEPTH = 64
/** Captured keys and string values are cut at this many bytes. */
const MAX_CAPTURE = 256

interface Frame {
  readonly array: boolean
  /** This container's own path. */
  readonly path: string
  /** The key whose value comes next (objects). */
  key: string | null
  expectingKey: boolean
}

export class JsonPathScanner {
  readonly #wanted: ReadonlySet<string>
  readonly #onValue: (path: string, value: JsonScalar) => void
  readonly #stack: Frame[] = []
  #inString = false
  #escaped = false
  #stringIsKey = false
  /** Bytes of the string being captured, or null when it is being skipped. */
  #capture: number[] | null = null
  #literal = ''
  #stopped = false
  #closed = false

  constructor(wanted: Iterable<string>, onValue: (path: string, value: JsonScalar) => void) {
    this.#wanted = new Set(wanted)
    this.#onValue = onValue
  }

  push(bytes: Uint8Array): void {
    if (this.#stopped) return
    let i = 0
    while (i < bytes.length) {
      if (this.#inString) {
        i = this.#scanString(bytes, i)
        continue
      }
      const byte = bytes[i] as number
      i++
      switch (byte) {
        case QUOTE:
          this.#flushLiteral()
          this.#startString()
          break
        case 0x7b: // {
        case 0x5b: // [
          this.#flushLiteral()
          if (this.#stack.length >= MAX_DEPTH) {
            this.#stopped = true
            return
          }
          this.#stack.push({ array: byte === 0x5b, path: this.#valuePath(), key: null, expectingKey: byte === 0x7b })
          break
        case 0x7d: // }
        case 0x5d: // ]
          this.#flushLiteral()
          if (this.#stack.pop() && this.#stack.length === 0) this.#closed = true
          break
        case 0x3a: {
          // :
          this.#flushLiteral()
          const top = this.#top()
          if (top && !top.array) top.expectingKey = false
          break
        }
        case 0x2c: {
          // ,
          this.#flushLiteral()
          const top = this.#top()
          if (top && !top.array) {
            top.expectingKey = true
            top.key = null
          }
          break
        }
        case 0x20:
        case 0x09:
        case 0x0a:
        case 0x0d:
          this.#flushLiteral()
          break
        default:
          if (this.#literal.length < 64) this.#literal += String.fromCharCode(byte)
      }
    }
  }

  /** Whether the top-level object or array was closed: the document arrived whole. */
  get complete(): boolean {
    return this.#closed
  }

  /** The text ended: a bare top-level number or literal completes here. */
  end(): void {
    this.#flushLiteral()
  }

  #top(): Frame | undefined {
    return this.#stack[this.#stack.length - 1]
  }

  /** The path of the value that comes next. */
  #valuePath(): string {
    const top = this.#top()
    if (!top) return ''
    const segment = top.array ? '[]' : top.key ?? '?'
    return top.path === '' ? segment : `${top.path}.${segment}`
  }

  #startString(): void {
    this.#inString = true
    this.#escaped = false
    const top = this.#top()
    this.#stringIsKey = top !== undefined && !top.array && top.expectingKey
    this.#capture = this.#stringIsKey || this.#wanted.has(this.#valuePath()) ? [] : null
  }

  /** Consume string bytes from `i`; returns where scanning continues. */
  #scanString(bytes: Uint8Array, i: number): number {
    const capture = this.#capture
    if (capture === null && !this.#escaped) {
      // Skipped strings (prompts, outputs) are jumped over at native speed.
      const quote = bytes.indexOf(QUOTE, i)
      const backslash = bytes.indexOf(BACKSLASH, i)
      if (quote === -1 && backslash === -1) return bytes.length
      if (backslash === -1 || (quote !== -1 && quote < backslash)) {
        this.#endString()
        return quote + 1
      }
      this.#escaped = true
      return backslash + 1
    }
    const byte = bytes[i] as number
    if (this.#escaped) this.#escaped = false
    else if (byte === BACKSLASH) this.#escaped = true
    else if (byte === QUOTE) {
      this.#endString()
      return i + 1
    }
    if (capture !== null && capture.length < MAX_CAPTURE) capture.push(byte)
    return i + 1
  }

  #endString(): void {
    this.#inString = false
    const capture = this.#capture
    this.#capture = null
    if (capture === null) return
    let text: string
    try {
      text = JSON.parse(`"${Buffer.from(capture).toString('utf8')}"`) as string
    } catch {
      text = Buffer.from(capture).toString('utf8')
    }
    const top = this.#top()
    if (this.#stringIsKey && top) {
      top.key = text
      return
    }
    this.#onValue(this.#valuePath(), text)
  }

  #flushLiteral(): void {
    const literal = this.#literal
    if (literal === '') return
    this.#literal = ''
    const path = this.#valuePath()
    if (!this.#wanted.has(path)) return
    if (literal === 'true' || literal === 'false') this.#onValue(path, literal === 'true')
    else if (literal === 'null') this.#onValue(path, null)
    else {
      const number = Number(literal)
      if (Number.isFinite(number)) this.#onValue(path, number)
    }
  }
}
