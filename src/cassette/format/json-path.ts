/**
 * The JSON paths a user normaliser names (`--normalize-path '$.messages[*].content'`): `$`, then
 * `.name`, `['name']`, `[0]`, `[*]`, `.*` and `..name` (any depth). A small reader of its own, not
 * a JSONPath library: replay needs only to find values and replace them, never filter
 * expressions (`?()`, which the libraries evaluate as script), and a bad path must be refused when
 * the cassette is recorded, naming what was expected.
 */
import type { JsonValue } from '../../json/canonical-json.js'

export type PathSegment = { readonly key: string } | { readonly index: number } | { readonly any: true } | { readonly deep: string | null }

export const JSON_PATH_SYNTAX = "$ followed by .name, ['name'], [0], [*], .* or ..name"

const NAME = /^[A-Za-z_$][\w$-]*/
const QUOTED = /^\[(?:'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)")\]/
const INDEX = /^\[(\d{1,9})\]/

/** The segments of `path`, or why it is not one (the caller names the flag or field). */
export function parseJsonPath(path: string): PathSegment[] | string {
  if (!path.startsWith('$')) return 'a path starts with $'
  const segments: PathSegment[] = []
  let rest = path.slice(1)
  while (rest !== '') {
    let match: RegExpExecArray | null
    if (rest.startsWith('..')) {
      const name = rest.startsWith('..*') ? '*' : NAME.exec(rest.slice(2))?.[0]
      if (!name) return `".." takes a name or * at ${JSON.stringify(rest)}`
      segments.push({ deep: name === '*' ? null : name })
      rest = rest.slice(2 + name.length)
    } else if (rest.startsWith('.*') || rest.startsWith('[*]')) {
      segments.push({ any: true })
      rest = rest.slice(rest.startsWith('.*') ? 2 : 3)
    } else if (rest.startsWith('.') && (match = NAME.exec(rest.slice(1)))) {
      segments.push({ key: match[0] })
      rest = rest.slice(1 + match[0].length)
    } else if ((match = QUOTED.exec(rest))) {
      segments.push({ key: (match[1] ?? match[2] ?? '').replace(/\\(.)/g, '$1') })
      rest = rest.slice(match[0].length)
    } else if ((match = INDEX.exec(rest))) {
      segments.push({ index: Number(match[1]) })
      rest = rest.slice(match[0].length)
    } else return `unexpected ${JSON.stringify(rest)}`
  }
  if (segments.length === 0) return '"$" alone names the whole body'
  return segments
}

/** `value` with every value `segments` reach replaced by `replacement`; the same object where none is. */
export function replaceAtPath(value: JsonValue, segments: readonly PathSegment[], replacement: JsonValue, at = 0): JsonValue {
  if (at === segments.length) return replacement
  if (value === null || typeof value !== 'object') return value
  const segment = segments[at] as PathSegment
  const children: Array<[string | number, JsonValue]> = Array.isArray(value) ? value.map((item, index) => [index, item]) : Object.entries(value)
  let changed = false
  const next = children.map(([key, child]): [string | number, JsonValue] => {
    let out = child
    if ('any' in segment || ('key' in segment && key === segment.key && !Array.isArray(value)) || ('index' in segment && key === segment.index)) out = replaceAtPath(child, segments, replacement, at + 1)
    else if ('deep' in segment) {
      if (segment.deep === null || (key === segment.deep && !Array.isArray(value))) out = replaceAtPath(child, segments, replacement, at + 1)
      // `..name` reaches every depth: below this child too.
      out = replaceAtPath(out, segments, replacement, at)
    }
    if (out !== child) changed = true
    return [key, out]
  })
  if (!changed) return value
  return Array.isArray(value) ? next.map(([, child]) => child) : Object.fromEntries(next)
}
