/**
 * Read a JSON Lines file line by line, as UTF-8, with bounds on the file and on each line.
 * Nothing larger than one line is held at a time. Every failure is a `ToolstormError` naming
 * the file and the line.
 */
import { isAscii, isUtf8 } from 'node:buffer'
import { createReadStream, promises as fs } from 'node:fs'
import { ToolstormError, type ErrorCode } from '../errors.js'

export interface JsonLinesLimits {
  /** Bytes the whole file may have. */
  maxBytes: number
  /** Bytes one line may have (it may depend on what earlier lines said). */
  maxLineBytes: (lineNumber: number) => number
  /** Code for content errors (an unterminated last line, invalid UTF-8). */
  invalidCode: ErrorCode
  /** What errors say was being done: `load the cassette FILE`. Default `read FILE`. */
  action?: string
  /**
   * The file ends in `bytes` without a newline: return true to skip them (an append-only file whose
   * last write was interrupted), false to fail as truncated (the default).
   */
  partialLastLine?: (bytes: number) => boolean
}

export interface TextLine {
  readonly text: string
  /** 1-based. */
  readonly number: number
}

function unreadable(action: string, error: unknown): ToolstormError {
  const code = (error as NodeJS.ErrnoException).code
  const reason = code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : code === 'EISDIR' ? 'it is a directory' : String(code ?? error)
  return new ToolstormError('ERR_FILE_UNREADABLE', `Failed to ${action}: ${reason}.`, { cause: error })
}

/** Check the file can be read and is within `maxBytes`, before streaming it. */
export async function statInput(file: string, maxBytes: number, action = `read ${file}`): Promise<number> {
  let stat
  try {
    stat = await fs.stat(file)
  } catch (error) {
    throw unreadable(action, error)
  }
  if (stat.isDirectory()) throw new ToolstormError('ERR_FILE_UNREADABLE', `Failed to ${action}: it is a directory.`)
  if (stat.size > maxBytes) throw new ToolstormError('ERR_INPUT_TOO_LARGE', `Failed to ${action}: it is ${stat.size} bytes, over the limit of ${maxBytes} bytes.`)
  return stat.size
}

/** UTF-8 bytes of `text`, computed only when its length alone cannot settle the comparison with `limit`. */
function exceeds(text: string, limit: number): boolean {
  if (text.length > limit) return true
  return text.length * 3 > limit && Buffer.byteLength(text) > limit
}

/** The 1-based line (counting from `first`) of the first invalid UTF-8 sequence in `chunk`. */
function invalidLine(chunk: Buffer, first: number): number {
  let line = first
  let start = 0
  while (start <= chunk.length) {
    const newline = chunk.indexOf(0x0a, start)
    const end = newline === -1 ? chunk.length : newline
    try {
      new TextDecoder('utf-8', { fatal: true }).decode(chunk.subarray(start, end))
    } catch {
      return line
    }
    if (newline === -1) break
    line++
    start = newline + 1
  }
  return line
}

/**
 * Yield the lines of `file`. The last line must end with a newline (else the file is truncated).
 * @note Each chunk is cut after its last newline: a newline byte never occurs inside a UTF-8
 * sequence, so the bytes before it are whole lines, checked with `isAscii`/`isUtf8` (simdutf). ASCII,
 * what JSON.stringify writes for most traffic, decodes as latin1, a plain copy: 4× faster than a
 * streaming `TextDecoder` on a 100 MB cassette. The bytes after the newline wait for the next chunk. Lines are split as strings: decoding line by line cost more than
 * parsing them.
 */
export async function* readJsonLines(file: string, limits: JsonLinesLimits): AsyncGenerator<TextLine> {
  const action = limits.action ?? `read ${file}`
  await statInput(file, limits.maxBytes, action)
  const decoder = new TextDecoder('utf-8', { ignoreBOM: true })
  let number = 1
  // The start of a line whose newline has not been read yet.
  let carry: Buffer[] = []
  let carried = 0
  let total = 0
  const tooLong = () => new ToolstormError('ERR_INPUT_TOO_LARGE', `Failed to ${action}: line ${number} is longer than ${limits.maxLineBytes(number)} bytes.`)
  let stream
  try {
    stream = createReadStream(file, { highWaterMark: 1024 * 1024 })
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      total += chunk.length
      if (total > limits.maxBytes) throw new ToolstormError('ERR_INPUT_TOO_LARGE', `Failed to ${action}: it exceeds the limit of ${limits.maxBytes} bytes.`)
      const lastNewline = chunk.lastIndexOf(0x0a)
      if (lastNewline === -1) {
        carry.push(chunk)
        carried += chunk.length
        if (carried > limits.maxLineBytes(number)) throw tooLong()
        continue
      }
      const head = chunk.subarray(0, lastNewline + 1)
      const whole = carried ? Buffer.concat([...carry, head]) : head
      carry = lastNewline + 1 < chunk.length ? [chunk.subarray(lastNewline + 1)] : []
      carried = chunk.length - lastNewline - 1
      let text: string
      if (isAscii(whole)) text = whole.toString('latin1')
      else if (isUtf8(whole)) text = decoder.decode(whole)
      else throw new ToolstormError(limits.invalidCode, `Failed to ${action}: line ${invalidLine(whole, number)} is not valid UTF-8.`)
      let start = 0
      // `text` ends with a newline, so every line found here is complete.
      for (let newline = text.indexOf('\n'); newline !== -1; newline = text.indexOf('\n', start)) {
        let line = text.slice(start, newline)
        if (exceeds(line, limits.maxLineBytes(number))) throw tooLong()
        if (line.endsWith('\r')) line = line.slice(0, -1)
        yield { text: line, number }
        number++
        start = newline + 1
      }
      if (carried > limits.maxLineBytes(number)) throw tooLong()
    }
    if (carried > 0 && limits.partialLastLine?.(carried)) return
    if (carried > 0 && !isUtf8(Buffer.concat(carry))) {
      throw new ToolstormError(limits.invalidCode, `Failed to ${action}: line ${number} is not valid UTF-8.`)
    }
  } catch (error) {
    if (error instanceof ToolstormError) throw error
    throw unreadable(action, error)
  } finally {
    stream?.destroy()
  }
  if (carried > 0) {
    throw new ToolstormError(limits.invalidCode, `Failed to ${action}: line ${number} ends without a newline, so the file is truncated (a write was cut short). Record it again, or restore the previous copy.`)
  }
}
