/**
 * Stepping over JSON text in a line's bytes without decoding it: strings by `indexOf` of their
 * closing quote, objects and arrays by their brackets. What is stepped over is not validated;
 * callers scan lines whose shape they check otherwise (splice-meta.ts), or fall back to
 * JSON.parse when a scan does not find what it expects (json-rpc-line.ts).
 */
/** The bytes JSON's structure is made of. */
export const QUOTE = 0x22
export const BACKSLASH = 0x5c
export const OPEN_BRACE = 0x7b
export const CLOSE_BRACE = 0x7d
const OPEN_BRACKET = 0x5b
const CLOSE_BRACKET = 0x5d
export const COMMA = 0x2c
export const COLON = 0x3a

export function isSpace(byte: number | undefined): boolean {
  return byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09
}

export function skipSpace(line: Buffer, at: number): number {
  while (isSpace(line[at])) at++
  return at
}

/** The index just past the string that opens at `at` (its quote), or -1. */
export function skipString(line: Buffer, at: number): number {
  let end = at
  for (;;) {
    end = line.indexOf(QUOTE, end + 1)
    if (end === -1) return -1
    let backslashes = 0
    while (line[end - 1 - backslashes] === BACKSLASH) backslashes++
    if (backslashes % 2 === 0) return end + 1
  }
}

/** The index just past the value that starts at `at`, or -1. */
export function skipValue(line: Buffer, at: number): number {
  const first = line[at]
  if (first === QUOTE) return skipString(line, at)
  if (first !== OPEN_BRACE && first !== OPEN_BRACKET) {
    // A number or a literal: up to the next delimiter.
    let end = at
    while (end < line.length && line[end] !== COMMA && line[end] !== CLOSE_BRACE && line[end] !== CLOSE_BRACKET && !isSpace(line[end])) end++
    return end
  }
  let depth = 0
  for (let i = at; i < line.length; i++) {
    const byte = line[i]
    if (byte === QUOTE) {
      i = skipString(line, i) - 1
      if (i < 0) return -1
    } else if (byte === OPEN_BRACE || byte === OPEN_BRACKET) depth++
    else if (byte === CLOSE_BRACE || byte === CLOSE_BRACKET) {
      if (--depth === 0) return i + 1
    }
  }
  return -1
}

