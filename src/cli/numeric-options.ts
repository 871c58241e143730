/**
 * Numeric flags, checked against what the user typed. yargs' `type: 'number'` turns `abc` into
 * NaN before any check sees it (and Node's listen() then failed with "Received type number
 * (NaN)", exit 3); these options leave the text alone and `coerce` it, so a refusal quotes it:
 * `--port: expected an integer 0-65535, got "abc"`. yargs reports a coerce error as a usage error
 * (exit 2, before the command starts).
 *
 * @note No `type`: yargs would print `[string]` in the help. Without one, yargs-parser still
 * reads numeric text as a number, and leaves anything else as typed.
 */
import type { Options } from 'yargs'

export interface NumberRange {
  readonly min: number
  readonly max: number
  /** Whole numbers only (default true). */
  readonly integer?: boolean
  /** What is expected, when "an integer MIN-MAX" does not say it well. */
  readonly expected?: string
}

const INTEGER = /^[+-]?\d+$/
const DECIMAL = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?$/i

/** The number `value` stands for, or an Error naming the flag, the expectation and the value as typed. */
function parseNumber(flag: string, range: NumberRange, value: unknown): number {
  const integer = range.integer ?? true
  const expected = range.expected ?? `${integer ? 'an integer' : 'a number'} ${range.min}-${range.max}`
  if (Array.isArray(value)) throw new Error(`--${flag}: expected ${expected} once, got ${value.length} values (${value.map((v) => JSON.stringify(String(v))).join(', ')})`)
  const text = String(value).trim()
  const number = Number(text)
  if (!(integer ? INTEGER : DECIMAL).test(text) || !Number.isFinite(number) || number < range.min || number > range.max) {
    throw new Error(`--${flag}: expected ${expected}, got ${JSON.stringify(String(value))}`)
  }
  return number
}

/** A flag taking one number in `range`. */
export function numberOption(flag: string, range: NumberRange): Options & { coerce: (value: unknown) => number } {
  return { requiresArg: true, coerce: (value: unknown) => parseNumber(flag, range, value) }
}

/** A repeatable flag taking numbers in `range` (an empty list by default). */
export function numberListOption(flag: string, range: NumberRange): Options & { coerce: (values: unknown) => number[] } {
  return {
    array: true,
    requiresArg: true,
    default: [] as number[],
    coerce: (values: unknown) => (Array.isArray(values) ? values : [values]).map((value: unknown) => parseNumber(flag, range, value)),
  }
}

/** Ports a server listens on: 0 picks a free one. */
export const LISTEN_PORT: NumberRange = { min: 0, max: 65_535 }

const SIZE = /^(\d+(?:\.\d+)?)\s*(b|k|kb|kib|m|mb|mib|g|gb|gib|t|tb|tib)?$/i
const SIZE_UNITS: Record<string, number> = { b: 1, k: 1024, kb: 1000, kib: 1024, m: 1024 ** 2, mb: 1000 ** 2, mib: 1024 ** 2, g: 1024 ** 3, gb: 1000 ** 3, gib: 1024 ** 3, t: 1024 ** 4, tb: 1000 ** 4, tib: 1024 ** 4 }

/** A size in bytes: `1048576`, `100MB` (10^6), `64MiB` or `64M` (2^20), `2GiB`… at least `min`. */
export function bytesOption(flag: string, min = 1): Options & { coerce: (value: unknown) => number } {
  return {
    requiresArg: true,
    coerce: (value: unknown) => {
      const match = SIZE.exec(String(value).trim())
      const bytes = match ? Math.floor(Number(match[1]) * (SIZE_UNITS[(match[2] ?? 'b').toLowerCase()] as number)) : NaN
      if (!Number.isSafeInteger(bytes) || bytes < min) throw new Error(`--${flag}: expected a size of at least ${min} bytes (1048576, 100MB, 64MiB, 2GiB), got ${JSON.stringify(String(value))}`)
      return bytes
    },
  }
}

const DURATION = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?$/i
const DURATION_UNITS: Record<string, number> = { ms: 0.001, s: 1, m: 60, h: 3600, d: 86_400 }

/** A duration in seconds: `90`, `90s`, `15m`, `6h`, `1d`, `500ms`, within `min`–`max` seconds. */
export function secondsOption(flag: string, range: { min: number; max: number }): Options & { coerce: (value: unknown) => number } {
  return {
    requiresArg: true,
    coerce: (value: unknown) => {
      const match = DURATION.exec(String(value).trim())
      const seconds = match ? Number(match[1]) * (DURATION_UNITS[(match[2] ?? 's').toLowerCase()] as number) : NaN
      if (!Number.isFinite(seconds) || seconds < range.min || seconds > range.max) throw new Error(`--${flag}: expected a duration of ${range.min}–${range.max} seconds (90, 90s, 15m, 6h, 1d), got ${JSON.stringify(String(value))}`)
      return seconds
    },
  }
}
