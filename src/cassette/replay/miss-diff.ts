/**
 * What a replay miss differed in: the closest recorded exchange and, for JSON bodies, up to five
 * JSON paths with short values on both sides (`$.messages[3].content: "…ship 2 boxes…" ≠ "…ship
 * 3 boxes…"`); for other bodies the first differing byte and both lengths. Both bodies are the
 * stored (redacted, normalised) forms, so a value shown here was never a credential.
 */
import { z } from 'zod'
import type { JsonValue } from '../../json/canonical-json.js'
import { formatJsonPath } from '../../json/strict-json.js'
import { exactNumberText, isExactNumber } from '../../json/exact-json.js'
import type { StoredBody } from '../format/cassette-schema.js'

/** Paths a diff lists at most. */
export const MAX_DIFF_PATHS = 5
/** Differing leaves counted at most (the similarity score stops there). */
const MAX_COUNTED = 1000
/** Characters of a value shown at most. */
const VALUE_WIDTH = 40

export const missDiffSchema = z.strictObject({
  /** The closest recorded exchange (1-based) and how the table names it. */
  position: z.int().min(1),
  exchange: z.string(),
  /** `same route`: same method and path; `other route`: the closest of any. */
  closeness: z.enum(['same route', 'other route']),
  /** The first thing that differs (method, origin, path, query, body, header). */
  difference: z.string(),
  /** Up to five JSON paths whose values differ, recorded (`expected`) and seen. */
  paths: z.array(z.strictObject({ path: z.string(), expected: z.string(), seen: z.string() })).max(MAX_DIFF_PATHS),
  /** Differing paths not listed (counted up to 1000). */
  morePaths: z.int().min(0),
  /** Non-JSON bodies: the first differing byte and both lengths (stored bytes). */
  bytes: z.strictObject({ offset: z.int().min(0), expectedLength: z.int().min(0), seenLength: z.int().min(0) }).nullable(),
})

export type MissDiff = z.infer<typeof missDiffSchema>
export type PathDiff = MissDiff['paths'][number]

/** How two bodies differ: JSON paths, or the first differing byte. `score`: 0 when equal, larger when further apart. */
export interface BodyDiff {
  readonly paths: PathDiff[]
  readonly morePaths: number
  readonly bytes: MissDiff['bytes']
  readonly score: number
}

const ABSENT = Symbol('absent')
type Side = JsonValue | typeof ABSENT

/** A short rendering of one value; with `other`, a string is shown around its first difference from it. */
function shortValue(value: Side, other: Side): string {
  if (value === ABSENT) return '(absent)'
  if (Array.isArray(value)) return `[${value.length} item${value.length === 1 ? '' : 's'}]`
  if (value !== null && typeof value === 'object') return `{${Object.keys(value).length} key${Object.keys(value).length === 1 ? '' : 's'}}`
  if (typeof value !== 'string') return JSON.stringify(value)
  if (isExactNumber(value)) return exactNumberText(value)
  if (value.length <= VALUE_WIDTH) return JSON.stringify(value)
  let at = 0
  if (typeof other === 'string') while (at < value.length && at < other.length && value[at] === other[at]) at++
  const start = Math.max(0, Math.min(at - 15, value.length - VALUE_WIDTH))
  const end = Math.min(value.length, start + VALUE_WIDTH)
  return `"${start > 0 ? '…' : ''}${JSON.stringify(value.slice(start, end)).slice(1, -1)}${end < value.length ? '…' : ''}"`
}

/** Differing leaves of two JSON values, in document order (the recorded side's key order first), minus keys in `ignore` at any depth. */
export function jsonDiff(expected: JsonValue, seen: JsonValue, ignore: readonly string[] = []): { paths: PathDiff[]; count: number } {
  const paths: PathDiff[] = []
  let count = 0
  const trail: Array<string | number> = []
  const differ = (a: Side, b: Side) => {
    if (count++ < MAX_DIFF_PATHS) paths.push({ path: formatJsonPath(trail), expected: shortValue(a, b), seen: shortValue(b, a) })
  }
  const walk = (a: Side, b: Side): void => {
    if (count >= MAX_COUNTED) return
    if (a === b) return
    const aArray = Array.isArray(a)
    const bArray = Array.isArray(b)
    if (aArray && bArray) {
      for (let i = 0; i < Math.max(a.length, b.length); i++) {
        trail.push(i)
        walk(i < a.length ? (a[i] as JsonValue) : ABSENT, i < b.length ? (b[i] as JsonValue) : ABSENT)
        trail.pop()
      }
      return
    }
    const aObject = a !== null && a !== ABSENT && typeof a === 'object' && !aArray
    const bObject = b !== null && b !== ABSENT && typeof b === 'object' && !bArray
    if (aObject && bObject) {
      const keys = [...Object.keys(a), ...Object.keys(b).filter((key) => !Object.hasOwn(a, key))]
      for (const key of keys) {
        if (ignore.includes(key)) continue
        trail.push(key)
        walk(Object.hasOwn(a, key) ? (a[key] as JsonValue) : ABSENT, Object.hasOwn(b, key) ? (b[key] as JsonValue) : ABSENT)
        trail.pop()
      }
      return
    }
    differ(a, b)
  }
  walk(expected, seen)
  return { paths, count: Math.min(count, MAX_COUNTED) }
}

function bytesOf(body: StoredBody | null): Buffer {
  return body === null ? Buffer.alloc(0) : Buffer.from(body.data, body.encoding)
}

/** The first offset where `a` and `b` differ (the shorter length when one is a prefix of the other), or -1. */
function firstDifference(a: Buffer, b: Buffer): number {
  const length = Math.min(a.length, b.length)
  for (let i = 0; i < length; i++) if (a[i] !== b[i]) return i
  return a.length === b.length ? -1 : length
}

/**
 * How the seen body differs from the recorded one. `json` gives both bodies as parsed (and
 * normalised) JSON when both are JSON; otherwise the stored bytes are compared.
 */
export function bodyDiff(expected: StoredBody | null, seen: StoredBody | null, json: { expected: JsonValue; seen: JsonValue } | null, ignore: readonly string[] = []): BodyDiff {
  if (json !== null) {
    const { paths, count } = jsonDiff(json.expected, json.seen, ignore)
    return { paths, morePaths: count - paths.length, bytes: null, score: count }
  }
  const a = bytesOf(expected)
  const b = bytesOf(seen)
  const offset = firstDifference(a, b)
  if (offset < 0) return { paths: [], morePaths: 0, bytes: null, score: 0 }
  // Further apart the earlier they part and the more their lengths differ; always worse than a JSON diff of a few paths.
  const longer = Math.max(a.length, b.length)
  return { paths: [], morePaths: 0, bytes: { offset, expectedLength: a.length, seenLength: b.length }, score: MAX_COUNTED * (1 - offset / longer) + 1 }
}

/** The diff as lines for a table or an error body's `details`. */
export function formatMissDiff(diff: MissDiff): string[] {
  const lines = [`closest recorded: exchange ${diff.position} (${diff.exchange}, ${diff.closeness}): ${diff.difference}`]
  for (const path of diff.paths) lines.push(`${path.path}: ${path.expected} ≠ ${path.seen}`)
  if (diff.morePaths > 0) lines.push(`… ${diff.morePaths}${diff.morePaths + diff.paths.length >= MAX_COUNTED ? '+' : ''} more differing path(s)`)
  if (diff.bytes) lines.push(`bodies part at byte ${diff.bytes.offset} (recorded ${diff.bytes.expectedLength} bytes, seen ${diff.bytes.seenLength})`)
  return lines
}

/** The diff in one clause for a message: the first path, or the byte offset. */
export function summarizeMissDiff(diff: MissDiff): string {
  // Where the bodies differ only says something when the body is what differs: after "method
  // differs (expected GET)", "from byte 0" would read as part of the method's difference.
  if (!diff.difference.startsWith('body')) return ''
  const first = diff.paths[0]
  if (first) return `at ${first.path}: ${first.expected} ≠ ${first.seen}${diff.paths.length + diff.morePaths > 1 ? ` (and ${diff.paths.length + diff.morePaths - 1} more path(s))` : ''}`
  if (diff.bytes) return `from byte ${diff.bytes.offset} (recorded ${diff.bytes.expectedLength} bytes, seen ${diff.bytes.seenLength})`
  return ''
}
