/**
 * Normalisers: values that are new in every run of an agent loop (tool-call ids, response ids,
 * timestamps, UUIDs) replaced by placeholders before a JSON request body is compared, so a
 * recorded conversation still matches when they differ. Chosen by name at record time and kept
 * in the cassette header (`match.normalize`); replay uses them unless told otherwise.
 *
 * They apply only where such values travel back to a provider or tool: a model request's
 * `messages[]` and `input[]` (chat completions, Responses, Anthropic messages: tool calls and the
 * tool results the agent sends back), `previous_response_id`, and an MCP `tools/call`'s
 * `params.arguments`. The rest of a body compares exactly. They change what is compared, never
 * what is stored or replayed: the cassette keeps the recorded (redacted) values.
 *
 * A string holding JSON text (a tool result's `content`) is normalised as the JSON it holds.
 * Ids and UUIDs are numbered in order of first appearance within one body (`<id:1>`, `<uuid:2>`),
 * so a body that refers to the same id twice (a tool call and its result) still differs from one
 * whose references disagree; timestamps all become `<timestamp>`.
 *
 * The user's own (`match.normalizePatterns`, `match.normalizePaths`) apply to the whole body: a
 * path's values become `<path>` (first), a pattern's matches in any string `<match:1>`, numbered
 * as ids are (last); a text body that is not JSON gets the patterns too.
 */
import type { JsonValue } from '../../json/canonical-json.js'
import { isExactNumber, parseJsonExact } from '../../json/exact-json.js'
import type { MatchOptions, Normaliser } from './cassette-schema.js'
import { parseJsonPath, replaceAtPath, type PathSegment } from './json-path.js'

/** Tool-call ids (`call_`, `toolu_`, `fc_`) and response/message ids (`resp_`, `msg_`, `chatcmpl-`, `rs_`) as providers mint them. */
const ID = /\b(?:(?:call|toolu|fc|resp|msg|rs)_|chatcmpl-)[A-Za-z0-9_-]{6,}/g
const UUID = /\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b/g
/** ISO 8601 date-times (`2026-12-02T06:45:00Z`, `…T06:45:00.123+01:00`, a space for the `T`). */
const ISO_TIME = /\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?(?![\d:])/g
/** Keys whose number is a Unix time (seconds or milliseconds since 2001): `created`, `created_at`, `timestamp`, `ts`, `…_time`. */
const TIME_KEY = /^(?:created|updated|timestamp|ts|time|date)$|_(?:at|time|ts)$|At$/
const TOP_SCOPES = ['messages', 'input'] as const

function isEpoch(value: number): boolean {
  return Number.isInteger(value) && ((value >= 1e9 && value < 1e10) || (value >= 1e12 && value < 1e13))
}

/** The user's normalisers, as a cassette header or a replay's options hold them. */
export type UserNormalisers = Partial<Pick<MatchOptions, 'normalizePatterns' | 'normalizePaths'>>

/** Compiled once per source (a cassette's few), bounded. */
const compiled = new Map<string, RegExp | PathSegment[]>()
function compiledOnce<T extends RegExp | PathSegment[]>(key: string, make: () => T): T {
  let found = compiled.get(key) as T | undefined
  if (found === undefined) {
    if (compiled.size >= 1000) compiled.clear()
    compiled.set(key, (found = make()))
  }
  return found
}
const patternsOf = (user: UserNormalisers) => (user.normalizePatterns ?? []).map((source) => compiledOnce(`p${source}`, () => new RegExp(source, 'g')))
const pathsOf = (user: UserNormalisers) =>
  (user.normalizePaths ?? []).map((path) =>
    compiledOnce(`j${path}`, () => {
      const parsed = parseJsonPath(path)
      if (typeof parsed === 'string') throw new Error(`Invalid JSON path ${JSON.stringify(path)}: ${parsed}`)
      return parsed
    }),
  )

class Renamer {
  readonly #ids = new Map<string, string>()
  readonly #uuids = new Map<string, string>()
  readonly #matches = new Map<string, string>()
  readonly #names: ReadonlySet<Normaliser>
  readonly #patterns: readonly RegExp[]

  constructor(names: readonly Normaliser[], patterns: readonly RegExp[] = []) {
    this.#names = new Set(names)
    this.#patterns = patterns
  }

  #numbered(map: Map<string, string>, kind: string, value: string): string {
    let out = map.get(value)
    if (out === undefined) map.set(value, (out = `<${kind}:${map.size + 1}>`))
    return out
  }

  string(text: string): string {
    // A number a double cannot hold (exact-json.ts) is no text to rename.
    if (isExactNumber(text)) return text
    // A tool result is often JSON text in a string: normalised as JSON, so its numeric times count too.
    const first = text.charCodeAt(0)
    if (first === 0x7b || first === 0x5b) {
      try {
        return JSON.stringify(this.value(parseJsonExact(text), null))
      } catch {
        // Not JSON: normalised as text.
      }
    }
    let out = text
    if (this.#names.has('ids')) out = out.replace(ID, (id) => this.#numbered(this.#ids, 'id', id))
    if (this.#names.has('uuids')) out = out.replace(UUID, (uuid) => this.#numbered(this.#uuids, 'uuid', uuid.toLowerCase()))
    if (this.#names.has('timestamps')) out = out.replace(ISO_TIME, '<timestamp>')
    for (const pattern of this.#patterns) out = out.replace(pattern, (found) => this.#numbered(this.#matches, 'match', found))
    return out
  }

  value(value: JsonValue, key: string | null): JsonValue {
    if (typeof value === 'string') return this.string(value)
    if (typeof value === 'number') return key !== null && this.#names.has('timestamps') && TIME_KEY.test(key) && isEpoch(value) ? '<timestamp>' : value
    if (value === null || typeof value !== 'object') return value
    if (Array.isArray(value)) return value.map((item) => this.value(item, null))
    const out: Record<string, JsonValue> = {}
    for (const [name, item] of Object.entries(value)) out[name] = this.value(item, name)
    return out
  }
}

/**
 * `value` (a parsed request body) with the named normalisers applied in their scopes, and the
 * user's over the whole body; the same object when none apply.
 */
export function normaliseJson(value: JsonValue, names: readonly Normaliser[], user: UserNormalisers = {}): JsonValue {
  let out = value
  for (const path of pathsOf(user)) out = replaceAtPath(out, path, '<path>')
  out = normaliseNamed(out, names)
  const patterns = patternsOf(user)
  return patterns.length ? new Renamer([], patterns).value(out, null) : out
}

/** A text body that is not JSON, with the user's patterns applied. */
export function normaliseText(text: string, user: UserNormalisers): string {
  const patterns = patternsOf(user)
  return patterns.length ? new Renamer([], patterns).string(text) : text
}

function normaliseNamed(value: JsonValue, names: readonly Normaliser[]): JsonValue {
  if (names.length === 0 || value === null || typeof value !== 'object' || Array.isArray(value)) return value
  const renamer = new Renamer(names)
  let out: Record<string, JsonValue> | null = null
  const set = (key: string, next: JsonValue) => {
    out ??= { ...value }
    out[key] = next
  }
  for (const key of TOP_SCOPES) if (Array.isArray(value[key])) set(key, renamer.value(value[key], key))
  if (typeof value.previous_response_id === 'string') set('previous_response_id', renamer.string(value.previous_response_id))
  const params = value.params
  if (value.method === 'tools/call' && params !== null && typeof params === 'object' && !Array.isArray(params) && params.arguments !== undefined) {
    set('params', { ...params, arguments: renamer.value(params.arguments, 'arguments') })
  }
  return out ?? value
}
