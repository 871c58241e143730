/**
 * Which headers a cassette stores, and how: hop-by-hop and toolstorm's control headers are
 * dropped, names are lowercased, secret headers keep their name with a `[REDACTED]` value, and
 * every other value goes through the redactor. Headers a user excludes are not stored at all.
 */
import { HEADER_CALL, HEADER_KEY, HEADER_RUN, type HeaderMap, HOP_BY_HOP_HEADERS } from '../../engine/http.js'
import type { Redactor } from '../../redact/index.js'
import type { StoredHeaders } from './cassette-schema.js'

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,256}$/
// `host` names whoever the client addressed (the proxy, in reverse mode): the URL says the rest.
const NEVER_STORED = new Set([...HOP_BY_HOP_HEADERS, 'host', HEADER_CALL, HEADER_KEY, HEADER_RUN])

/** The headers to store, redacted. `exclude`: lowercase names not to store; `only`: when given, the only names stored. */
export function storeHeaders(headers: HeaderMap, redactor: Redactor, exclude: ReadonlySet<string> = new Set(), only: ReadonlySet<string> | null = null): StoredHeaders {
  const kept: Record<string, string | string[]> = {}
  for (const [rawName, value] of Object.entries(headers)) {
    if (value === undefined) continue
    const name = rawName.toLowerCase()
    // HTTP/2 pseudo-headers (`:authority`, in browser HARs) and malformed names are not headers.
    if (NEVER_STORED.has(name) || exclude.has(name) || (only !== null && !only.has(name)) || !TOKEN.test(name)) continue
    const previous = kept[name]
    if (previous === undefined) kept[name] = Array.isArray(value) ? [...value] : value
    else kept[name] = [...(Array.isArray(previous) ? previous : [previous]), ...(Array.isArray(value) ? value : [value])]
  }
  return redactor.headers(kept) as StoredHeaders
}

/** First value of a header (names are lowercase in stored and Node header maps). */
export function headerOf(headers: HeaderMap | StoredHeaders, name: string): string | undefined {
  const value = headers[name]
  return Array.isArray(value) ? value[0] : value
}
