/**
 * Challenge headers (`WWW-Authenticate`, `Proxy-Authenticate`, RFC 9110 §11.6.1) as redaction reads
 * them: a list of challenges whose auth-params (`name="value"`) are structure, not credentials.
 * Scanned as plain text, `Bearer resource_metadata="http://…"` reads as a bearer token
 * (`resource_metadata=`) and loses the URL an MCP client needs to find the authorization server
 * (RFC 9728, #37). So each auth-param (`name=value`, where a `password=…` is still seen) is scanned
 * apart from the scheme word before it, and anything else (a `token68` after a scheme: `Bearer
 * eyJ…`) is scanned whole, as before.
 *
 * @example
 * redactChallenge('Bearer resource_metadata="http://127.0.0.1:4000/prm"', scrub) // unchanged
 * redactChallenge('Bearer realm="x", Negotiate YIIGdQ…==', scrub) // the token68 is redacted
 */

/** Challenge headers, lower-cased. */
export const CHALLENGE_HEADERS: ReadonlySet<string> = new Set(['www-authenticate', 'proxy-authenticate'])

/** One comma-separated element: quoted strings may hold commas. */
const ELEMENT = /(?:"(?:[^"\\]|\\.)*"|[^,"])+|(?=,)/g
/**
 * An auth-param, with the scheme word that opens a challenge before it: `[scheme ]name=value`,
 * the value neither empty nor starting with `=` (`Bearer YWJj==` is a token68 with its padding).
 */
const AUTH_PARAM = /^(\s*)(?:([A-Za-z][\w!#$%&'*+.^`|~-]*)(\s+))?([\w!#$%&'*+.^`|~-]+)(\s*=\s*)((?!=)[\s\S]+)$/

/** `value` with `scrub` applied to each auth-param without its scheme word, and to every other element whole. */
export function redactChallenge(value: string, scrub: (text: string) => string): string {
  return value.replace(ELEMENT, (element) => {
    const param = AUTH_PARAM.exec(element)
    if (param === null) return scrub(element)
    const [, lead, scheme, gap, name, equals, paramValue] = param as unknown as [string, string, string | undefined, string | undefined, string, string, string]
    return `${lead}${scheme === undefined ? '' : `${scheme}${gap as string}`}${scrub(name + equals + paramValue)}`
  })
}
