/**
 * Header maps as `node:http` builds them from raw header lines, and the checks that keep a
 * response head well-formed.
 */

/** A repeated one of these is dropped, as node:http does (RFC 9110 lets a recipient keep one). */
const SINGLE_VALUED = new Set([
  'age', 'authorization', 'content-length', 'content-type', 'etag', 'expires', 'from', 'host', 'if-modified-since', 'if-unmodified-since',
  'last-modified', 'location', 'max-forwards', 'proxy-authorization', 'referer', 'retry-after', 'server', 'user-agent',
])

export type HeaderObject = Record<string, string | string[]>

/**
 * Raw `[name, value, name, value…]` lines to a map with lowercase names. Requests follow
 * node:http's rules for repeats (`set-cookie` a list, single-valued fields keep the first, `cookie`
 * joined with `; `, others with `, `); responses keep undici's shape (every repeat joined, a
 * repeated `set-cookie` becomes a list), which recorders and faults were written against.
 */
export function headerObject(raw: readonly string[], kind: 'request' | 'response'): HeaderObject {
  const out: HeaderObject = {}
  const request = kind === 'request'
  for (let i = 0; i < raw.length; i += 2) {
    const name = (raw[i] as string).toLowerCase()
    const value = raw[i + 1] as string
    const existing = out[name]
    if (existing === undefined) out[name] = request && name === 'set-cookie' ? [value] : value
    else if (Array.isArray(existing)) existing.push(value)
    else if (name === 'set-cookie') out[name] = [existing, value]
    else if (request && SINGLE_VALUED.has(name)) continue
    else out[name] = `${existing}${request && name === 'cookie' ? '; ' : ', '}${value}`
  }
  return out
}

const TOKEN = /^[\^_`a-zA-Z\-0-9!#$%&'*+.|~]+$/
const INVALID_VALUE = /[^\t\x20-\x7e\x80-\xff]/

/** Refuse a header that would break the response head (a CR/LF in a value would split it). */
export function assertValidHeader(name: string, value: string): void {
  if (!TOKEN.test(name)) throw Object.assign(new TypeError(`Header name must be a valid HTTP token ["${name}"]`), { code: 'ERR_INVALID_HTTP_TOKEN' })
  if (INVALID_VALUE.test(value)) throw Object.assign(new TypeError(`Invalid character in header content ["${name}"]`), { code: 'ERR_INVALID_CHAR' })
}

let dateText = ''
let dateExpires = 0

/** The `Date` header value, formatted once per second. */
export function httpDate(): string {
  const now = Date.now()
  if (now >= dateExpires) {
    dateText = new Date(now).toUTCString()
    dateExpires = now - (now % 1000) + 1000
  }
  return dateText
}
