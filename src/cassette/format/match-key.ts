/**
 * What replay compares: the method, the path with a normalised query, the redacted body and
 * the chosen headers. Everything is computed on redacted values, so a replay with another real
 * credential still matches its recording.
 *
 * The origin is not part of the key: a request to the replay server's own address (origin-form)
 * matches a recording made through a reverse proxy or forward proxy alike. When both the
 * recording and the request name an origin (absolute-form), the origins must agree too.
 */
import { createHash } from 'node:crypto'
import type { JsonValue } from '../../json/canonical-json.js'
import { parseJsonExact } from '../../json/exact-json.js'
import { mediaType } from '../../redact/redact-body.js'
import type { MatchOptions, Normaliser, StoredBody, StoredHeaders } from './cassette-schema.js'
import { normaliseJson, normaliseText, type UserNormalisers } from './normalisers.js'
import { comparableForm, decodePairs } from './form-body.js'
import { headerOf } from './store-headers.js'

/** A request as stored (or as replay normalises a live one). */
export interface RequestShape {
  readonly method: string
  readonly url: string
  readonly headers: StoredHeaders
  readonly body: StoredBody | null
  /** The body was never read while recording: any body matches. */
  readonly bodyUnknown?: true
}

/** The digest of a body that was never read: it matches any body. */
export const ANY_BODY = '*'

export interface MatchView {
  /** Index key: method, path and query, body digest and chosen headers. */
  readonly key: string
  /** `scheme://host[:port]` for absolute-form URLs, else null. */
  readonly origin: string | null
  readonly method: string
  readonly path: string
  readonly query: string
  readonly bodyDigest: string | null
  /** The body's length on the wire when it was cut at the body limit (only a prefix is compared with it), else null. */
  readonly bodyCutFrom: number | null
  readonly headers: readonly (string | null)[]
  /** The index key without the body, for exchanges whose body is unknown. */
  readonly looseKey: string
}

const ABSOLUTE = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/([^/?#]*)([^?#]*)(?:\?([^#]*))?/
const ORIGIN_FORM = /^([^?#]*)(?:\?([^#]*))?/
const DEFAULT_PORTS: Record<string, string> = { http: '80', https: '443' }

/** Split a URL into a normalised origin (or null), path and query. */
export function splitUrl(url: string): { origin: string | null; path: string; query: string } {
  const absolute = ABSOLUTE.exec(url)
  if (absolute) {
    const scheme = (absolute[1] as string).toLowerCase()
    let authority = (absolute[2] as string).slice((absolute[2] as string).lastIndexOf('@') + 1).toLowerCase()
    const port = /:(\d+)$/.exec(authority)?.[1]
    if (port !== undefined && DEFAULT_PORTS[scheme] === port) authority = authority.slice(0, -port.length - 1)
    return { origin: `${scheme}://${authority}`, path: absolute[3] || '/', query: absolute[4] ?? '' }
  }
  const relative = ORIGIN_FORM.exec(url) as RegExpExecArray
  return { origin: null, path: relative[1] || '/', query: relative[2] ?? '' }
}

/** Query pairs decoded, re-encoded one way, sorted by name (values of one name keep their order), minus `ignore`. */
export function normaliseQuery(query: string, ignore: readonly string[] = []): string {
  if (query === '') return ''
  const pairs: Array<[string, string]> = []
  for (const [name, value] of decodePairs(query)) {
    if (ignore.includes(name)) continue
    pairs.push([name, value === null ? encodeURIComponent(name) : `${encodeURIComponent(name)}=${encodeURIComponent(value)}`])
  }
  // Array.prototype.sort is stable: repeated names keep their order.
  return pairs
    .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
    .map(([, encoded]) => encoded)
    .join('&')
}

/**
 * JSON with sorted keys, minus `drop`. Only compared with itself, so unlike `canonicalJson` it
 * need not match Python's escaping: plain `JSON.stringify` for leaves is enough, and faster.
 */
function sortedJson(value: JsonValue, drop: ReadonlySet<string> | null): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value)
  if (Array.isArray(value)) {
    let out = '['
    for (let i = 0; i < value.length; i++) out += (i ? ',' : '') + sortedJson(value[i] as JsonValue, drop)
    return out + ']'
  }
  const keys = Object.keys(value).sort()
  let out = '{'
  let first = true
  for (const key of keys) {
    if (drop?.has(key)) continue
    out += (first ? '' : ',') + JSON.stringify(key) + ':' + sortedJson(value[key] as JsonValue, drop)
    first = false
  }
  return out + '}'
}

/**
 * A JSON-RPC request (MCP) without its `id`: clients number their requests, so the id differs from
 * run to run and never takes part in matching (the replayed answer gets the live id: rpc-ids.ts).
 */
function withoutRpcId(value: JsonValue): JsonValue {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value
  if (value.jsonrpc !== '2.0' || typeof value.method !== 'string' || !('id' in value)) return value
  const { id: _id, ...rest } = value
  return withProgressTokenBlanked(rest)
}

/**
 * An MCP request whose `params._meta.progressToken` holds a placeholder: the client picks the
 * token each run (the SDKs use the request id), so only whether one was sent is compared (the
 * replayed progress notifications get the live token: echoed-values.ts).
 */
function withProgressTokenBlanked(request: Record<string, JsonValue>): JsonValue {
  const params = request.params
  if (params === null || typeof params !== 'object' || Array.isArray(params)) return request
  const meta = params._meta
  if (meta === null || typeof meta !== 'object' || Array.isArray(meta) || !('progressToken' in meta)) return request
  return { ...request, params: { ...params, _meta: { ...meta, progressToken: '<progressToken>' } } }
}

function isJson(contentType: string | undefined): boolean {
  const type = mediaType(contentType)
  return type === 'application/json' || type === 'text/json' || type.endsWith('+json')
}

/**
 * A JSON body as replay compares it (without a JSON-RPC request's id, normalised, its numbers exact:
 * exact-json.ts), or undefined when it is not whole JSON text (then its bytes are compared).
 */
export function comparableJson(body: StoredBody | null, contentType: string | undefined, normalize: readonly Normaliser[] = [], user: UserNormalisers = {}): JsonValue | undefined {
  if (body === null || body.encoding !== 'utf8' || body.truncated || !isJson(contentType)) return undefined
  try {
    return normaliseJson(withoutRpcId(parseJsonExact(body.data)), normalize, user)
  } catch {
    // Not JSON after all: compare the text.
    return undefined
  }
}

/**
 * A body as replay compares it field by field: JSON (comparableJson), or a form body's fields
 * (form-body.ts); undefined when its bytes are compared.
 */
export function comparableBody(body: StoredBody | null, contentType: string | undefined, normalize: readonly Normaliser[] = [], user: UserNormalisers = {}): JsonValue | undefined {
  return comparableJson(body, contentType, normalize, user) ?? comparableFormWith(body, contentType, user)
}

/** A form body's fields with the user's patterns and paths applied to their values. */
function comparableFormWith(body: StoredBody | null, contentType: string | undefined, user: UserNormalisers): JsonValue | undefined {
  const form = comparableForm(body, contentType)
  return form === undefined ? undefined : normaliseJson(form, [], user)
}

/**
 * A digest of the body: JSON and form bodies compare by content (key order and spacing aside,
 * minus `ignoreFields`), anything else byte for byte; a body cut at the body limit by its length
 * on the wire and its stored prefix.
 */
export function bodyDigest(body: StoredBody | null, contentType: string | undefined, ignoreFields: readonly string[] = [], normalize: readonly Normaliser[] = [], user: UserNormalisers = {}): string | null {
  if (body === null) return null
  const json = comparableJson(body, contentType, normalize, user)
  const form = json === undefined ? comparableFormWith(body, contentType, user) : undefined
  const drop = ignoreFields.length ? new Set(ignoreFields) : null
  // A body past the limit matches only when its length on the wire and its stored prefix both do.
  const text = body.encoding === 'utf8' && !body.truncated ? normaliseText(body.data, user) : body.data
  const canonical = json !== undefined ? 'json:' + sortedJson(json, drop) : form !== undefined ? 'form:' + sortedJson(form, drop) : `${body.encoding}:${body.truncated ? `prefix of ${body.size}:` : ''}${text}`
  return createHash('sha256').update(canonical).digest('base64url')
}

/** What replay compares for one request. */
export function matchView(request: RequestShape, options: MatchOptions): MatchView {
  const { origin, path, query } = splitUrl(request.url)
  const method = request.method.toUpperCase()
  const normalisedQuery = normaliseQuery(query, options.ignoreQuery)
  const digest = request.bodyUnknown ? ANY_BODY : bodyDigest(request.body, headerOf(request.headers, 'content-type'), options.ignoreBodyFields, options.normalize, options)
  const headers = options.headers.map((name) => {
    const value = request.headers[name.toLowerCase()]
    return value === undefined ? null : Array.isArray(value) ? value.join(', ') : value
  })
  const suffix = headers.length ? '\n' + JSON.stringify(headers) : ''
  const looseKey = `${method} ${path}?${normalisedQuery}\n${ANY_BODY}${suffix}`
  const key = request.bodyUnknown ? looseKey : `${method} ${path}?${normalisedQuery}\n${digest ?? '-'}${suffix}`
  const bodyCutFrom = request.body?.truncated ? request.body.size : null
  return { key, looseKey, origin, method, path, query: normalisedQuery, bodyDigest: digest, bodyCutFrom, headers }
}

/** Why `seen` does not match `expected` (never echoing a body), or null when it does. */
export function describeDifference(expected: MatchView, seen: MatchView, options: MatchOptions): string | null {
  if (expected.method !== seen.method) return `method differs (expected ${expected.method})`
  if (expected.origin !== null && seen.origin !== null && expected.origin !== seen.origin) return `origin differs (expected ${expected.origin})`
  if (expected.path !== seen.path) return `path differs (expected ${expected.path})`
  if (expected.query !== seen.query) return `query differs (expected ?${expected.query})`
  if (expected.bodyDigest !== ANY_BODY && expected.bodyDigest !== seen.bodyDigest) {
    if (expected.bodyDigest === null) return 'body differs (expected none)'
    if (seen.bodyDigest === null) return 'body differs (expected one, got none)'
    if (expected.bodyCutFrom !== null && expected.bodyCutFrom !== seen.bodyCutFrom) return `body differs (expected ${expected.bodyCutFrom} bytes, of which the cassette keeps a prefix)`
    return 'body differs'
  }
  for (let i = 0; i < options.headers.length; i++) {
    if (expected.headers[i] !== seen.headers[i]) return `header ${options.headers[i]} differs`
  }
  return null
}
