/**
 * Form-encoded bodies (`application/x-www-form-urlencoded`) as replay compares them: as their
 * fields, like JSON by content, so `--ignore-body-field` (`match.ignoreBodyFields`) leaves out a
 * field that changes every run. OAuth's token request is one: PKCE's `code_verifier` is new in
 * every authorization (#37), and a byte-for-byte comparison could never match it.
 *
 * A form becomes a JSON object of its decoded fields (a repeated name: its values in order, as an
 * array); field order and percent-encoding spelling (`%20` or `+`) do not count.
 *
 * @example
 * comparableForm({ encoding: 'utf8', data: 'code=abc&code_verifier=x1', … }, 'application/x-www-form-urlencoded')
 * // { code: 'abc', code_verifier: 'x1' }
 */
import type { JsonValue } from '../../json/canonical-json.js'
import { mediaType } from '../../redact/redact-body.js'
import { safePercentDecode } from '../../redact/encoded-secrets.js'
import type { StoredBody } from './cassette-schema.js'

const FORM = 'application/x-www-form-urlencoded'

/** The decoded `name=value` pairs of a query string or form body (`null`: a name without `=`), in order. */
export function decodePairs(text: string): Array<[string, string | null]> {
  const pairs: Array<[string, string | null]> = []
  for (const pair of text.split('&')) {
    if (pair === '') continue
    const eq = pair.indexOf('=')
    const name = safePercentDecode((eq < 0 ? pair : pair.slice(0, eq)).replace(/\+/g, ' '))
    pairs.push([name, eq < 0 ? null : safePercentDecode(pair.slice(eq + 1).replace(/\+/g, ' '))])
  }
  return pairs
}

/** Whether a content type is a form body. */
export function isFormBody(contentType: string | undefined): boolean {
  return mediaType(contentType) === FORM
}

/** A form body's fields as a JSON object (see above), or undefined when it is not a whole form body. */
export function comparableForm(body: StoredBody | null, contentType: string | undefined): JsonValue | undefined {
  if (body === null || body.encoding !== 'utf8' || body.truncated || !isFormBody(contentType)) return undefined
  // No prototype: a field named `__proto__` stays a field.
  const fields: Record<string, JsonValue> = Object.create(null) as Record<string, JsonValue>
  for (const [name, value] of decodePairs(body.data)) {
    const previous = fields[name]
    if (previous === undefined) fields[name] = value
    else fields[name] = Array.isArray(previous) ? [...previous, value] : [previous, value]
  }
  return fields
}
