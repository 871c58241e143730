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
const HEADER_LINE = /(?<![A-Za-z0-9_-])(?<name>[A-Za-z0-9-]{0,40}(?:authorization|cookie))(?<sep>[ \t]{0,8}:[ \t]{0,8})(?!\[REDACTED\])(?<value>[^\s\\"][^\r\n\\"]{0,8191})/gi

// `name = value`, `name: value`, `"name":"value"`, `'name': 'value'`, `--password=value`,
// form names with brackets (`user[password]=value`), and JSON text inside a JSON string
// (`\"password\":\"value\"`, what a JSON body that did not parse holds).
// Only the name and separator are matched here; the value is read (by `VALUE`) after the
// name proved secret, so ordinary `a: b` pairs cost nothing more, and after a non-secret name
// the scan resumes right there: `"note":"password=x"` still reaches the inner assignment.
const ASSIGNMENT =
  /(?<![A-Za-z0-9_.-])-{0,2}(?<q>\\?["']?)(?<name>[A-Za-z_][A-Za-z0-9_.[\]-]{0,63})\k<q>[ \t]{0,8}[:=][ \t]{0,8}/g

// The value at the position after a secret name's separator. Quoted values stop at the first
// unescaped quote or line break; an unterminated quote (`password="hunter2` in a cut log
// line) falls through to the bare form.
const VALUE = new RegExp(
  [
    '"(?<dq>(?:[^"\\\\\\r\\n]|\\\\.){0,8192})"',
    // An escaped quote opens a value of JSON text inside a string; it ends at the next one.
    '|\\\\"(?<eq>(?:[^"\\\\\\r\\n]|\\\\[^"\\r\\n]){0,8192})\\\\"',
    "|'(?<sq>(?:[^'\\\\\\r\\n]|\\\\.){0,8192})'",
    '|(?!\\[REDACTED\\])(?<bare>["\']?(?:(?:Bearer|Basic|Token|Digest|Bot)[ \\t]{1,4})?[^\\s,;&"\'<>{}\\[\\]()]{1,8192})',
  ].join(''),
  'iy',
)

// A multipart part in text (a form echoed in a JSON string, a log line): its
// `Content-Disposition: form-data; name="…"` line, up to 8 more header lines, a blank line, and the
// value up to the line that opens the next boundary (`--`). In JSON text that did not parse, the
// line breaks and quotes are escaped (`name=\"password\"\r\n\r\n…`) and the value also ends at the
// string's closing quote.
const multipartPart = (eol: string, quote: string, valueChar: string): RegExp =>
  new RegExp(
    String.raw`content-disposition:[ \t]{0,8}form-data;[^\r\n]{0,400}?\bname=${quote}(?<name>[^"\\\r\n]{1,200})${quote}[^\r\n]{0,400}?` +
      String.raw`${eol}(?:[^\r\n\\]{1,200}${eol}){0,8}?${eol}(?!\[REDACTED\])(?<value>(?:(?!${eol}--)${valueChar}){1,65536})`,
    'gi',
  )
const MULTIPART_PARTS = [multipartPart(String.raw`\r?\n`, '"', '[^]'), multipartPart(String.raw`(?:\\r\\n|\\n)`, String.raw`\\"`, String.raw`(?:\\[^]|[^"\\])`)]

// `<password>…</password>` in XML or HTML.
const XML_ELEMENT = /<(?<name>[A-Za-z_][A-Za-z0-9_.:-]{0,63})>(?<value>[^<]{1,8192})<\/\k<name>>/g

function redactAssignments(text: string, isSecretName: (name: string) => boolean): string {
  let out = ''
  let copied = 0
  ASSIGNMENT.lastIndex = 0
  for (let head = ASSIGNMENT.exec(text); head !== null; head = ASSIGNMENT.exec(text)) {
    const { q, name } = head.groups as { q: string; name: string }
    if (!isSecretName(name)) continue
    const valueStart = head.index + head[0].length
    VALUE.lastIndex = valueStart
    const value = VALUE.exec(text)
    if (value === null) continue
    const { dq, sq, eq } = value.groups as { dq?: string; sq?: string; eq?: string }
    let replacement: string
    if (dq !== undefined) replacement = `"${REDACTED}"`
    else if (eq !== undefined) replacement = `\\"${REDACTED}\\"`
    else if (sq !== undefined) replacement = `'${REDACTED}'`
    // A quoted name with a bare value is JSON-like (`"token":null`): quote the marker so the
    // text stays valid JSON.
    else replacement = q === '"' || q === '\\"' ? `${q}${REDACTED}${q}` : REDACTED
    out += text.slice(copied, valueStart) + replacement
    copied = valueStart + value[0].length
    ASSIGNMENT.lastIndex = copied
  }
  return copied === 0 ? text : out + text.slice(copied)
}

/** Replace the values assigned to secret names in `text`. */
export function redactSecretAssignments(text: string, isSecretName: (name: string) => boolean): string {
  let out = text.replace(HEADER_LINE, (match, ...args: unknown[]) => {
    const { name, sep } = args[args.length - 1] as { name: string; sep: string }
    return isSecretName(name) ? name + sep + REDACTED : match
  })
  out = redactAssignments(out, isSecretName)
  if (/content-disposition/i.test(out)) {
    for (const part of MULTIPART_PARTS) {
      out = out.replace(part, (match, ...args: unknown[]) => {
        const { name, value } = args[args.length - 1] as { name: string; value: string }
        return isSecretName(name) ? match.slice(0, match.length - value.length) + REDACTED : match
      })
    }
  }
  if (out.includes('</')) {
    out = out.replace(XML_ELEMENT, (match, ...args: unknown[]) => {
      const { name, value } = args[args.length - 1] as { name: string; value: string }
      return isSecretName(name) && value !== REDACTED ? `<${name}>${REDACTED}</${name}>` : match
    })
  }
  return out
}
