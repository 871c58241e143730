/**
 * JSON read for comparison: two texts compare equal only when their numbers have the same decimal
 * value. `JSON.parse` rounds every number to a double, so `12345678901234567890` and
 * `12345678901234567891` (a 64-bit id), `1.00000000000000001` and `1`, or `1e400` and `null`
 * (Infinity stringifies as null) read the same: replay matched requests that differed.
 *
 * A number a double cannot hold exactly is kept as a marker string (`exactNumber`) holding its
 * decimal value in a canonical form, so it equals only the same value written another way. Every
 * other number stays a number: a decimal of at most 15 significant digits in the double range is
 * the one its double prints as, so equal values compare equal whichever path read them.
 *
 * @note Fast path: `JSON.parse`, unless the text holds a run of 16 digits or points, or an
 * exponent of 3 digits (the only ways to write a number a double rounds). Node 20 has no
 * `JSON.parse` source access (V8 11.4+), so the rest goes through the strict reader with a hook.
 * @note Text that names one member twice (`{"a":1,"a":2}`) is refused on both paths, as the strict
 * reader always did: `JSON.parse` keeps the last, so it read the same as `{"a":2}`, which a server
 * that takes the first reads otherwise (duplicate-keys.ts).
 */
import type { JsonValue } from './canonical-json.js'
import { hasDuplicateKeys } from './duplicate-keys.js'
import { parseStrictJson } from './strict-json.js'

/** Numbers `JSON.parse` may round: 16 significant digits or more, or an exponent of 3 digits. */
const MAYBE_INEXACT = /\d[\d.]{15}|[eE][+-]?\d{3}/

/** What a number a double cannot hold exactly is read as: a noncharacter and a word no client's string starts with. */
const MARKER = '\uffffnumber:'

/** Nesting the strict reader follows at most; deeper text is compared as bytes by the callers. */
const MAX_DEPTH = 1000

/** Strings (skipped), and the number tokens `MAYBE_INEXACT` flags (group 1). */
const SUSPECT_NUMBERS = /"(?:[^"\\]|\\.)*"|(-?\d[\d.]{15,}(?:[eE][+-]?\d+)?|-?\d[\d.]*[eE][+-]?\d{3,})/g

/** `text` parsed as JSON, its numbers exact (see the file's comment). Throws on text that is not JSON, or that names a member of one object twice. */
export function parseJsonExact(text: string): JsonValue {
  if (!MAYBE_INEXACT.test(text) || everyNumberExact(text)) {
    const value = JSON.parse(text) as JsonValue
    if (!hasDuplicateKeys(text, value)) return value
  }
  // The strict reader refuses a duplicate key, naming it and where it is.
  return parseStrictJson(text, { maxDepth: MAX_DEPTH, number: exactNumber })
}

/** Whether a double holds every long number of `text` exactly (a float printed by a JSON writer does: its shortest form). */
function everyNumberExact(text: string): boolean {
  for (const match of text.matchAll(SUSPECT_NUMBERS)) {
    const number = match[1]
    if (number !== undefined && typeof exactNumber(number) === 'string') return false
  }
  return true
}

/** Whether a string is a number `parseJsonExact` kept as its decimal value. */
export function isExactNumber(value: string): boolean {
  return value.startsWith(MARKER)
}

/** The number a marker holds, as a message shows it: `12345678901234567891`, `1.00000000000000001`, `1e400`. */
export function exactNumberText(marker: string): string {
  const [, sign = '', digits = '', exponent = '0'] = /^(-?)(\d+)e(-?\d+)$/.exec(marker.slice(MARKER.length)) ?? []
  const power = Number(exponent)
  if (power >= 0 && power <= 40) return sign + digits + '0'.repeat(power)
  if (power < 0 && -power <= 40) {
    const padded = digits.padStart(1 - power, '0')
    return `${sign}${padded.slice(0, power)}.${padded.slice(power)}`
  }
  return `${sign}${digits}e${power}`
}

/** A number token as a double when the double holds its value exactly, else as a marker of its decimal value. */
function exactNumber(raw: string): JsonValue {
  const value = Number(raw)
  // What a JSON writer prints is the shortest form of its double: the same text back.
  if (String(value) === raw) return value
  const decimal = canonicalDecimal(raw)
  return Number.isFinite(value) && canonicalDecimal(String(value)) === decimal ? value : MARKER + decimal
}

/** `-1.50e2` as `-15e1`: sign, significant digits without leading or trailing zeros, exponent; zero as `0`. */
function canonicalDecimal(raw: string): string {
  const match = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(raw)
  if (!match) return raw
  const [, sign, whole, fraction = '', exponent = '0'] = match
  let digits = (whole as string) + fraction
  let power = BigInt(exponent) - BigInt(fraction.length)
  digits = digits.replace(/^0+/, '')
  if (digits === '') return '0'
  const kept = digits.replace(/0+$/, '')
  power += BigInt(digits.length - kept.length)
  return `${sign}${kept}e${power}`
}
