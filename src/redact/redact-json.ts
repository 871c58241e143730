/**
 * The JSON walker behind `Redactor.json()`: a deep copy in which secret-named keys lose
 * their values and every string and key is scrubbed. A string holding JSON text (a tool call's
 * `arguments`, a tool result's `text`, an echoed request body) is walked as the JSON it holds.
 */
import type { JsonValue } from '../json/canonical-json.js'
import { hasDuplicateKeys } from '../json/duplicate-keys.js'
import { isAuthorizationCode } from './oauth-code.js'
import { RedactionCollisionError } from './redaction-collision-error.js'
import { REDACTED } from './redacted-marker.js'

/** What the walker needs from a redactor. */
export interface JsonScrubber {
  text(value: string): string
  isSecretName(name: string): boolean
}

/** The redacted copy and whether it differs from the input. */
export interface RedactedJson {
  value: JsonValue
  changed: boolean
}

// How many strings deep JSON text is read as JSON. Real traffic nests three or four: a model
// request's tool result (1) holding a tool's answer (2) that echoes the request body it sent (3).
// Each level re-reads at most the text of the one above, so a crafted body costs at most this many
// parses of itself; and each level doubles the backslashes before a quote, so text 8 deep spends
// 255 of them on each quote, which no program writes. Deeper text is still scanned as text.
const MAX_JSON_TEXT_DEPTH = 8

/** The JSON a string holds, or undefined: only text that opens and closes like an object or array is tried. */
function jsonIn(text: string): JsonValue | undefined {
  const first = text.trimStart()[0]
  const last = text.trimEnd().at(-1)
  if (!((first === '{' && last === '}') || (first === '[' && last === ']'))) return undefined
  try {
    const parsed = JSON.parse(text) as JsonValue
    // Two members of one name: re-serialised, the first would be lost unscanned (the text scan reads both).
    return hasDuplicateKeys(text, parsed) ? undefined : parsed
  } catch {
    return undefined
  }
}

/** Redact a JSON value; never mutates it. Throws `RedactionCollisionError` on key collisions. */
export function redactJson(value: JsonValue, scrubber: JsonScrubber): RedactedJson {
  return redactAt(value, scrubber, 0)
}

function redactAt(value: JsonValue, scrubber: JsonScrubber, textDepth: number): RedactedJson {
  let changed = false

  const string = (node: string): string => {
    const held = textDepth < MAX_JSON_TEXT_DEPTH ? jsonIn(node) : undefined
    if (held !== undefined && typeof held === 'object' && held !== null) {
      try {
        const inner = redactAt(held, scrubber, textDepth + 1)
        if (inner.changed) {
          changed = true
          return JSON.stringify(inner.value)
        }
        return node
      } catch (error) {
        // Two keys of the inner text scrubbed to one: the text scan below still covers every string.
        if (!(error instanceof RedactionCollisionError)) throw error
      }
    }
    const scrubbed = scrubber.text(node)
    if (scrubbed !== node) changed = true
    return scrubbed
  }

  const walk = (node: JsonValue): JsonValue => {
    if (typeof node === 'string') return string(node)
    if (node === null || typeof node !== 'object') return node
    if (Array.isArray(node)) return node.map(walk)
    const entries = new Map<string, JsonValue>()
    for (const [key, child] of Object.entries(node)) {
      const scrubbedKey = scrubber.text(key)
      if (scrubbedKey !== key) changed = true
      if (entries.has(scrubbedKey)) throw new RedactionCollisionError(scrubbedKey)
      if (scrubber.isSecretName(key) || (key === 'code' && typeof child === 'string' && isAuthorizationCode(child, Object.keys(node), 'object'))) {
        if (child !== REDACTED) changed = true
        entries.set(scrubbedKey, REDACTED)
      } else {
        entries.set(scrubbedKey, walk(child))
      }
    }
    // `Object.fromEntries` defines own properties, so a `__proto__` key stays a plain key.
    return Object.fromEntries(entries)
  }

  return { value: walk(value), changed }
}
