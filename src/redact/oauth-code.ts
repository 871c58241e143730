/**
 * OAuth authorization codes: the `code` of an authorization response (the redirect
 * `https://app/cb?code=…&state=…`, or its fragment) and of the token request that redeems it
 * (`grant_type=authorization_code&code=…`, a form body or JSON). Until it is redeemed, the code
 * is worth a token to whoever holds it (with the verifier, which is secret by name).
 *
 * `code` is not a secret name: error codes, country codes and the `code` a code-running tool gets
 * are everywhere, and a redacted value compares equal in replay, so two calls that ran different
 * code would match each other. A `code` is taken for an authorization code when the pairs or the
 * object around it are OAuth's (a marker below) and its value is long enough to be one (OAuth
 * codes are unguessable, RFC 6749 §10.10: 20+ characters in practice), or, alone, when its value
 * is a long token (a callback that dropped `state`).
 */
import { REDACTED } from './redacted-marker.js'

/** Names that mark query, fragment or form pairs as an authorization response or a token request. */
const PAIR_MARKERS = new Set(['state', 'session_state', 'iss', 'redirect_uri', 'grant_type', 'code_verifier'])

/** Names that mark a JSON object as a token request (`state` is too common a JSON field to count). */
const OBJECT_MARKERS = new Set(['redirect_uri', 'grant_type', 'code_verifier'])

// Shortest code taken beside a marker: `code=US&state=CA` (a country and a state) is no grant.
const MIN_CODE_WITH_MARKER = 10

// Shortest code taken alone, when it also looks random: a digit, or upper and lower case.
const MIN_CODE_ALONE = 20
const RANDOM_LOOKING = /[0-9]|[a-z][^]*[A-Z]|[A-Z][^]*[a-z]/

const CODE_CHARS = /^[A-Za-z0-9._~+/=:*!$-]+$/

/** Whether `value`, under the name `code` among `names`, is an authorization code. */
export function isAuthorizationCode(value: string, names: Iterable<string>, where: 'pairs' | 'object'): boolean {
  if (!CODE_CHARS.test(value)) return false
  const markers = where === 'pairs' ? PAIR_MARKERS : OBJECT_MARKERS
  for (const name of names) if (markers.has(name)) return value.length >= MIN_CODE_WITH_MARKER
  return where === 'pairs' && value.length >= MIN_CODE_ALONE && RANDOM_LOOKING.test(value)
}

// `code=` opening a query, fragment or form text, or after `&` in one, in free text (a URL in a
// log line, a redirect echoed in a JSON string).
const CODE_PAIR = /(?<=^|[?#&\s"'(,;])code=(?<value>[^&#\s"'<>\\()[\]]{1,4096})/g

// The characters of a URL or form text, around `code=`.
const RUN_CHAR = /[^\s"'<>\\()]/

// How far around `code=` the run is read, so text of many pairs costs linear time.
const MAX_RUN_SIDE = 4096

// Pair names in a run: after its start, `?`, `#` or `&`.
const PAIR_NAME = /(?:^|[?#&])([A-Za-z_][A-Za-z0-9_.-]{0,63})=/g

/** Replace authorization codes in `code=…` pairs found in free text. */
export function redactAuthorizationCodes(text: string): string {
  if (!text.includes('code=')) return text
  return text.replace(CODE_PAIR, (match, ...args: unknown[]) => {
    const { value } = args[args.length - 1] as { value: string }
    const offset = args[args.length - 3] as number
    let start = offset
    while (start > 0 && offset - start < MAX_RUN_SIDE && RUN_CHAR.test(text[start - 1] as string)) start--
    let end = offset + match.length
    while (end < text.length && end - offset < MAX_RUN_SIDE && RUN_CHAR.test(text[end] as string)) end++
    const names = Array.from(text.slice(start, end).matchAll(PAIR_NAME), (pair) => (pair[1] as string).toLowerCase())
    return isAuthorizationCode(value, names, 'pairs') ? `code=${REDACTED}` : match
  })
}
