/**
 * Values a client picks anew every run, which the other side echoes back, and which a replayed
 * answer must therefore carry as the live client sent them (as a replayed JSON-RPC answer carries
 * the live id: rpc-ids.ts). A client that compares the echo with its own value drops an answer
 * that carries the recorded one (#37):
 *
 * - MCP's `progressToken` (the SDKs use the request id): every `notifications/progress` of the
 *   call names it, and the SDK client drops progress for a token that is not its own;
 * - a field that replay ignores because it changes every run (`--ignore-query state`,
 *   `--ignore-body-field`): OAuth's authorization answer echoes `state` in its redirect, and the
 *   Python SDK refuses a redirect whose `state` is not the one it sent;
 * - a field the recording redacted (a user's `--redact-key`): the answer holds `[REDACTED]` where
 *   the server had echoed the client's value.
 *
 * For each such name, the value recorded in the request and the live request's value (in the
 * query, a JSON body at any depth, or a form body) are paired; the answer's JSON fields of that
 * name (the body, or each event's data) and its `Location` query parameters holding the recorded
 * value get the live one. When the live value cannot be known (the name holds several values, or
 * the body was not read whole) an answer that echoes the recorded value is reported, so the
 * verdict says the client got a value it did not send.
 */
import type { JsonValue } from '../../json/canonical-json.js'
import { editJsonMessages } from '../../mcp/json-rpc-body.js'
import { REDACTED } from '../../redact/redacted-marker.js'
import type { MatchOptions, StoredBody } from '../format/cassette-schema.js'
import { decodePairs, isFormBody } from '../format/form-body.js'
import { splitUrl } from '../format/match-key.js'
import { mediaType } from '../../redact/redact-body.js'

/** The MCP field every progress notification echoes. */
const PROGRESS_TOKEN = 'progressToken'

/** A request as echoes are read from it: its target, content type, and body text (null: none, or not read whole). */
export interface EchoSource {
  readonly url: string
  readonly contentType: string | undefined
  readonly body: string | null
}

export interface EchoPlan {
  /** Per name: the recorded request's value and the live request's value that replaces it in the answer. */
  readonly values: ReadonlyMap<string, { readonly recorded: JsonValue; readonly live: JsonValue }>
  /** Per name: recorded values whose live counterpart is unknown (an answer echoing one is reported). */
  readonly unknown: ReadonlyMap<string, readonly JsonValue[]>
}

/** The values of every field by name: query parameters, and a JSON body's keys at any depth or a form body's fields. */
function valuesByName(source: EchoSource): Map<string, JsonValue[]> {
  const byName = new Map<string, JsonValue[]>()
  const add = (name: string, value: JsonValue) => {
    const list = byName.get(name)
    if (list) list.push(value)
    else byName.set(name, [value])
  }
  for (const [name, value] of decodePairs(splitUrl(source.url).query)) if (value !== null) add(name, value)
  if (source.body === null) return byName
  if (isFormBody(source.contentType)) {
    for (const [name, value] of decodePairs(source.body)) if (value !== null) add(name, value)
    return byName
  }
  if (!isJson(source.contentType)) return byName
  let parsed: JsonValue
  try {
    parsed = JSON.parse(source.body) as JsonValue
  } catch {
    return byName
  }
  const walk = (node: JsonValue): void => {
    if (node === null || typeof node !== 'object') return
    if (Array.isArray(node)) return node.forEach(walk)
    for (const [key, child] of Object.entries(node)) {
      add(key, child)
      walk(child)
    }
  }
  walk(parsed)
  return byName
}

function isJson(contentType: string | undefined): boolean {
  const type = mediaType(contentType)
  return type === 'application/json' || type.endsWith('+json')
}

function same(a: JsonValue, b: JsonValue): boolean {
  return a === b || (typeof a === 'object' && typeof b === 'object' && JSON.stringify(a) === JSON.stringify(b))
}

function distinct(values: readonly JsonValue[]): JsonValue[] {
  const out: JsonValue[] = []
  for (const value of values) if (!out.some((seen) => same(seen, value))) out.push(value)
  return out
}

/** The live request: its body read only when an echo is possible (`complete`: it was read whole). */
export interface LiveEchoSource {
  readonly url: string
  readonly contentType: string | undefined
  readonly complete: boolean
  body(): string | null
}

/**
 * What to rewrite in the recorded answer (`answer`: its text, body and `Location`) to `live` of the
 * exchange recorded for `recorded`, or null when nothing.
 */
export function echoPlan(recorded: EchoSource, live: LiveEchoSource, match: Pick<MatchOptions, 'ignoreQuery' | 'ignoreBodyFields'>, answer: string): EchoPlan | null {
  // Cheap tests first: most answers hold none of these names, and no body is parsed again for them.
  const recordedText = recorded.url + (recorded.body ?? '')
  const mayEcho =
    (answer.includes(PROGRESS_TOKEN) && recordedText.includes(PROGRESS_TOKEN)) ||
    (answer.includes(REDACTED) && recordedText.includes(REDACTED)) ||
    match.ignoreQuery.some((name) => answer.includes(name)) ||
    match.ignoreBodyFields.some((name) => answer.includes(name))
  if (!mayEcho) return null
  const before = valuesByName(recorded)
  const now = valuesByName({ url: live.url, contentType: live.contentType, body: live.complete ? live.body() : null })
  const names = new Set([PROGRESS_TOKEN, ...match.ignoreQuery, ...match.ignoreBodyFields])
  for (const [name, values] of before) if (values.includes(REDACTED)) names.add(name)
  const values = new Map<string, { recorded: JsonValue; live: JsonValue }>()
  const unknown = new Map<string, JsonValue[]>()
  for (const name of names) {
    const recordedValues = distinct(before.get(name) ?? [])
    if (recordedValues.length === 0) continue
    const liveValues = distinct(now.get(name) ?? [])
    if (recordedValues.length === 1 && liveValues.length === 1) {
      if (!same(recordedValues[0] as JsonValue, liveValues[0] as JsonValue)) values.set(name, { recorded: recordedValues[0] as JsonValue, live: liveValues[0] as JsonValue })
      continue
    }
    // Reported only where the client surely compares the echo with its own value: a progress
    // token, or a value the recording hid. An ignored field of several values is left as recorded.
    const ambiguous = liveValues.length > 1 || recordedValues.length > 1 || (liveValues.length === 0 && !live.complete)
    if (ambiguous && (name === PROGRESS_TOKEN || recordedValues.includes(REDACTED))) unknown.set(name, recordedValues)
  }
  return values.size || unknown.size ? { values, unknown } : null
}

/**
 * Rewrites one piece of the answer (a body, or an event of a stream) as `plan` says; `unrestored`
 * hears the names of echoes it found but could not restore.
 */
export function echoRewrite(plan: EchoPlan, unrestored: (name: string) => void): (bytes: Buffer) => Buffer {
  const visit = (node: Record<string, unknown>): boolean => {
    let changed = false
    for (const [key, child] of Object.entries(node)) {
      const echo = plan.values.get(key)
      if (echo && same(child as JsonValue, echo.recorded)) {
        node[key] = echo.live
        changed = true
        continue
      }
      if (plan.unknown.get(key)?.some((value) => same(value, child as JsonValue))) unrestored(key)
      changed = visitChild(child) || changed
    }
    return changed
  }
  const visitChild = (child: unknown): boolean => {
    if (child === null || typeof child !== 'object') return false
    if (!Array.isArray(child)) return visit(child as Record<string, unknown>)
    let changed = false
    for (const item of child) changed = visitChild(item) || changed
    return changed
  }
  return (bytes) => {
    const edited = editJsonMessages(bytes, visit)
    return edited === null ? bytes : Buffer.from(edited.buffer, edited.byteOffset, edited.byteLength)
  }
}

/** A `Location` (a redirect) with its query parameters that echo a recorded value given the live one. */
export function echoLocation(location: string, plan: EchoPlan, unrestored: (name: string) => void): string {
  const at = location.indexOf('?')
  if (at < 0) return location
  const end = location.indexOf('#', at)
  const query = location.slice(at + 1, end < 0 ? undefined : end)
  let changed = false
  const pairs = query.split('&').map((raw) => {
    const [pair] = decodePairs(raw)
    if (pair === undefined || pair[1] === null) return raw
    const [name, value] = pair
    const echo = plan.values.get(name)
    if (echo && same(value, typeof echo.recorded === 'string' ? echo.recorded : JSON.stringify(echo.recorded))) {
      changed = true
      return `${raw.slice(0, raw.indexOf('='))}=${encodeURIComponent(typeof echo.live === 'string' ? echo.live : JSON.stringify(echo.live))}`
    }
    if (plan.unknown.get(name)?.some((recorded) => recorded === value)) unrestored(name)
    return raw
  })
  return changed ? location.slice(0, at + 1) + pairs.join('&') + (end < 0 ? '' : location.slice(end)) : location
}

/** A stored request body as text for `echoPlan` (null for none, binary or cut bodies). */
export function storedBodyText(body: StoredBody | null): string | null {
  return body === null || body.encoding !== 'utf8' || body.truncated ? null : body.data
}
