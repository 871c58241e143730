/**
 * Whether a JSON text names one member of an object twice (`{"a":1,"a":2}`). `JSON.parse` keeps
 * the last and says nothing, so two bodies a server may read differently (one that takes the
 * first) parsed alike: replay matched them, and redaction re-serialised the body without the
 * first member. Callers that find duplicates compare or scan the text as it is instead.
 *
 * @note Fast because it never re-reads the text as JSON: each member of an object written in the
 * text has one `:` outside strings, so the text's colons, less the colons inside the strings and
 * keys `JSON.parse` returned, count the members written; when the parsed objects hold fewer, two
 * had one name. A `\u003a` escape puts a colon in a string without writing one, which would blur
 * the count: only then does the strict reader (which refuses duplicates) decide.
 */
import type { JsonValue } from './canonical-json.js'
import { parseStrictJson, StrictJsonError } from './strict-json.js'

/** Occurrences of `:` in `text`. */
function colonsIn(text: string): number {
  let count = 0
  for (let at = text.indexOf(':'); at !== -1; at = text.indexOf(':', at + 1)) count++
  return count
}

/** Whether `text`, which `JSON.parse` read as `parsed`, names a member of one object twice. */
export function hasDuplicateKeys(text: string, parsed: JsonValue): boolean {
  let members = 0
  let colonsInStrings = 0
  // An explicit stack: JSON.parse reads nesting deeper than a recursive walk could follow.
  const stack: JsonValue[] = [parsed]
  while (stack.length > 0) {
    const node = stack.pop() as JsonValue
    if (typeof node === 'string') {
      colonsInStrings += colonsIn(node)
    } else if (Array.isArray(node)) {
      for (const item of node) if (item !== null && typeof item === 'object') stack.push(item)
      else if (typeof item === 'string') colonsInStrings += colonsIn(item)
    } else if (node !== null && typeof node === 'object') {
      for (const key in node) {
        members++
        colonsInStrings += colonsIn(key)
        const child = node[key] as JsonValue
        if (typeof child === 'string') colonsInStrings += colonsIn(child)
        else if (child !== null && typeof child === 'object') stack.push(child)
      }
    }
  }
  const written = colonsIn(text) - colonsInStrings
  if (!text.includes('\\u003')) return written !== members
  try {
    parseStrictJson(text, { maxDepth: Number.POSITIVE_INFINITY, number: () => 0 })
    return false
  } catch (error) {
    // A duplicate, or nesting past the call stack: either way the text is not read as JSON.
    return error instanceof StrictJsonError || error instanceof RangeError
  }
}
