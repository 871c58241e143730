/**
 * The JSON walker behind `Redactor.json()`: a deep copy in which secret-named keys lose
 * their values and every string and key is scrubbed.
 */
import type { JsonValue } from '../json/canonical-json.js'
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

/** Redact a JSON value; never mutates it. Throws `RedactionCollisionError` on key collisions. */
export function redactJson(value: JsonValue, scrubber: JsonScrubber): RedactedJson {
  let changed = false

  const walk = (node: JsonValue): JsonValue => {
    if (typeof node === 'string') {
      const scrubbed = scrubber.text(node)
      if (scrubbed !== node) changed = true
      return scrubbed
    }
    if (node === null || typeof node !== 'object') return node
    if (Array.isArray(node)) return node.map(walk)
    const entries = new Map<string, JsonValue>()
    for (const [key, child] of Object.entries(node)) {
      const scrubbedKey = scrubber.text(key)
      if (scrubbedKey !== key) changed = true
      if (entries.has(scrubbedKey)) throw new RedactionCollisionError(scrubbedKey)
      if (scrubber.isSecretName(key)) {
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
