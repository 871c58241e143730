/**
 * Secret values assigned to secret names inside free text: `password=…`, `api_key: …`,
 * `"token":"…"`, `Authorization: Bearer …` header lines and `<password>…</password>`.
 *
 * The name decides, through the same predicate as JSON keys and headers, so `pwd=` in a log
 * line, a form body and a query string are all treated alike.
 * @note Only scalar values are caught here: in raw text, `"credentials": {…}` keeps its
 * nested fields unless they are secret-named themselves. Parsed JSON goes through the JSON
 * walker instead, which redacts whole objects.
 */
import { REDACTED } from './redacted-marker.js'

// `Authorization:` / `Proxy-Authorization:` / `Cookie:` / `Set-Cookie:` header lines: the value
// has spaces (`Bearer x`, `a=1; b=2`), so it runs to the end of the line, or to a quote or
// backslash so that a header line quoted inside a JSON string does not swallow what follows.
const HEADER_LINE = /(?<![A-Za-z0-9_-])(?<name>[A-Za-z0-9-]{0,40}(?:authorization|cookie))(?<sep>[ \t]{0,8}:[ \t]{0,8})(?!\[REDACTED\])(?<value>[^\r\n\\"]{1,8192})/gi

// `name = value`, `name: value`, `"name":"value"`, `'name': 'value'`. Quoted values use the
// lookahead-and-backreference idiom so a missing closing quote fails in linear time.
const ASSIGNMENT = new RegExp(
  [
    '(?<![A-Za-z0-9_.])',
    '(?<q>["\']?)(?<name>[A-Za-z_][A-Za-z0-9_.-]{0,63})\\k<q>',
    '(?<sep>[ \\t]{0,8}[:=][ \\t]{0,8})',
    '(?:',
    '"(?=(?<dq>(?:[^"\\\\\\r\\n]|\\\\.){0,8192}))\\k<dq>"',
    '|',
    "'(?=(?<sq>(?:[^'\\\\\\r\\n]|\\\\.){0,8192}))\\k<sq>'",
    '|',
    '(?!\\[REDACTED\\])(?<bare>(?:(?:Bearer|Basic|Token|Digest|Bot)[ \\t]{1,4})?[^\\s,;&"\'<>{}\\[\\]()]{1,8192})',
    ')',
  ].join(''),
  'gi',
)

// `<password>…</password>` in XML or HTML.
const XML_ELEMENT = /<(?<name>[A-Za-z_][A-Za-z0-9_.:-]{0,63})>(?<value>[^<]{1,8192})<\/\k<name>>/g

interface AssignmentGroups {
  q: string
  name: string
  sep: string
  dq?: string
  sq?: string
  bare?: string
}

/** Replace the values assigned to secret names in `text`. */
export function redactSecretAssignments(text: string, isSecretName: (name: string) => boolean): string {
  let out = text.replace(HEADER_LINE, (match, ...args: unknown[]) => {
    const { name, sep } = args[args.length - 1] as { name: string; sep: string }
    return isSecretName(name) ? name + sep + REDACTED : match
  })
  out = out.replace(ASSIGNMENT, (match, ...args: unknown[]) => {
    const g = args[args.length - 1] as AssignmentGroups
    if (!isSecretName(g.name)) return match
    const head = g.q + g.name + g.q + g.sep
    if (g.dq !== undefined) return g.dq === REDACTED ? match : `${head}"${REDACTED}"`
    if (g.sq !== undefined) return g.sq === REDACTED ? match : `${head}'${REDACTED}'`
    // A quoted name with a bare value is JSON-like (`"token":null`): quote the marker so the
    // text stays valid JSON.
    return g.q === '"' ? `${head}"${REDACTED}"` : head + REDACTED
  })
  if (out.includes('</')) {
    out = out.replace(XML_ELEMENT, (match, ...args: unknown[]) => {
      const { name, value } = args[args.length - 1] as { name: string; value: string }
      return isSecretName(name) && value !== REDACTED ? `<${name}>${REDACTED}</${name}>` : match
    })
  }
  return out
}
