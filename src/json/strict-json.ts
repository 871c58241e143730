/**
 * A strict JSON reader for files users hand us (rules, reports, cassettes).
 *
 * @note Hand-written because `JSON.parse` silently keeps the last of two duplicate keys and
 * has no depth limit, and a hand-edited cassette with a duplicated key must be refused, not
 * half-read. Errors name the line, column and JSON path.
 */
import type { JsonValue } from './canonical-json.js'

export interface StrictJsonOptions {
  /** Maximum nesting depth of arrays and objects. */
  maxDepth?: number
  /** How a number token is read (default: `Number`, refusing one out of the double range). */
  number?: (raw: string) => JsonValue
}

export class StrictJsonError extends Error {
  constructor(
    message: string,
    readonly line: number,
    readonly column: number,
    readonly path: string,
  ) {
    super(message)
  }
}

const WHITESPACE = new Set([0x20, 0x09, 0x0a, 0x0d])

/** Parse `text` as strict JSON. Throws `StrictJsonError` with position and path. */
export function parseStrictJson(text: string, options: StrictJsonOptions = {}): JsonValue {
  const maxDepth = options.maxDepth ?? 64
  let pos = 0
  const path: Array<string | number> = []

  const fail = (message: string): never => {
    let line = 1
    let lineStart = 0
    for (let i = 0; i < pos && i < text.length; i++) {
      if (text.charCodeAt(i) === 0x0a) {
        line++
        lineStart = i + 1
      }
    }
    throw new StrictJsonError(message, line, pos - lineStart + 1, formatJsonPath(path))
  }

  const skip = () => {
    while (pos < text.length && WHITESPACE.has(text.charCodeAt(pos))) pos++
  }

  const parseString = (): string => {
    // pos is at the opening quote
    pos++
    let out = ''
    let chunkStart = pos
    while (true) {
      if (pos >= text.length) fail('unterminated string')
      const c = text.charCodeAt(pos)
      if (c === 0x22) {
        out += text.slice(chunkStart, pos)
        pos++
        return out
      }
      if (c < 0x20) fail('control character in string')
      if (c === 0x5c) {
        out += text.slice(chunkStart, pos)
        const e = text[pos + 1]
        switch (e) {
          case '"': out += '"'; break
          case '\\': out += '\\'; break
          case '/': out += '/'; break
          case 'b': out += '\b'; break
          case 'f': out += '\f'; break
          case 'n': out += '\n'; break
          case 'r': out += '\r'; break
          case 't': out += '\t'; break
          case 'u': {
            const hex = text.slice(pos + 2, pos + 6)
            if (!/^[0-9a-fA-F]{4}$/.test(hex)) fail('invalid \\u escape')
            out += String.fromCharCode(parseInt(hex, 16))
            pos += 4
            break
          }
          default:
            fail('invalid escape sequence')
        }
        pos += 2
        chunkStart = pos
        continue
      }
      pos++
    }
  }

  const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y
  const parseNumber = (): JsonValue => {
    NUMBER.lastIndex = pos
    const m = NUMBER.exec(text)
    if (!m || m[0].length === 0 || m[0] === '-') fail('invalid number')
    const raw = (m as RegExpExecArray)[0]
    if (options.number) {
      pos += raw.length
      return options.number(raw)
    }
    const value = Number(raw)
    if (!Number.isFinite(value)) fail('number out of range')
    pos += raw.length
    return value
  }

  const parseValue = (depth: number): JsonValue => {
    skip()
    if (pos >= text.length) fail('unexpected end of input')
    const c = text[pos]
    if (c === '{') {
      if (depth >= maxDepth) fail(`nesting exceeds ${maxDepth} levels`)
      pos++
      const obj: Record<string, JsonValue> = {}
      const seen = new Set<string>()
      skip()
      if (text[pos] === '}') {
        pos++
        return obj
      }
      while (true) {
        skip()
        if (text[pos] !== '"') fail('expected a string key')
        const key = parseString()
        if (seen.has(key)) fail(`duplicate key "${key}"`)
        seen.add(key)
        skip()
        if (text[pos] !== ':') fail('expected ":"')
        pos++
        path.push(key)
        const value = parseValue(depth + 1)
        path.pop()
        // defineProperty keeps a "__proto__" key as data instead of changing the prototype.
        Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true })
        skip()
        if (text[pos] === ',') {
          pos++
          continue
        }
        if (text[pos] === '}') {
          pos++
          return obj
        }
        fail('expected "," or "}"')
      }
    }
    if (c === '[') {
      if (depth >= maxDepth) fail(`nesting exceeds ${maxDepth} levels`)
      pos++
      const arr: JsonValue[] = []
      skip()
      if (text[pos] === ']') {
        pos++
        return arr
      }
      while (true) {
        path.push(arr.length)
        arr.push(parseValue(depth + 1))
        path.pop()
        skip()
        if (text[pos] === ',') {
          pos++
          continue
        }
        if (text[pos] === ']') {
          pos++
          return arr
        }
        fail('expected "," or "]"')
      }
    }
    if (c === '"') return parseString()
    if (text.startsWith('true', pos)) {
      pos += 4
      return true
    }
    if (text.startsWith('false', pos)) {
      pos += 5
      return false
    }
    if (text.startsWith('null', pos)) {
      pos += 4
      return null
    }
    if (c === '-' || (c !== undefined && c >= '0' && c <= '9')) return parseNumber()
    return fail(`unexpected character ${JSON.stringify(c)}`)
  }

  if (text.charCodeAt(0) === 0xfeff) fail('a byte order mark is not allowed')
  const value = parseValue(0)
  skip()
  if (pos < text.length) fail('unexpected content after the JSON value')
  return value
}

/** Format a JSON path as `$.rules[0].kind`. */
export function formatJsonPath(path: ReadonlyArray<PropertyKey>): string {
  let out = '$'
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`
    else if (typeof part === 'string' && /^[A-Za-z_$][\w$]*$/.test(part)) out += `.${part}`
    else out += `[${JSON.stringify(String(part))}]`
  }
  return out
}
