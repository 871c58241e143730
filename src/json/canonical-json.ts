/**
 * Canonical JSON: sorted keys, no whitespace, every character outside printable ASCII
 * escaped as `\uXXXX` (lowercase hex, astral characters as surrogate pairs).
 *
 * @note This is the text ToolStorm (Python) hashes with `json.dumps(sort_keys=True,
 * separators=(",", ":"), ensure_ascii=True)`. For strings and integers the output is
 * byte-identical, which keeps the decision hash compatible (see `decision.ts`). Non-integral
 * numbers use JavaScript's shortest round-trip form, not Python's `repr`.
 */

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue }

const SHORT_ESCAPES: Record<string, string> = {
  '"': '\\"',
  '\\': '\\\\',
  '\n': '\\n',
  '\r': '\\r',
  '\t': '\\t',
  '\b': '\\b',
  '\f': '\\f',
}

/** Quote a string the way Python's `json.dumps(..., ensure_ascii=True)` does. */
export function quoteAscii(value: string): string {
  let out = '"'
  for (let i = 0; i < value.length; i++) {
    const ch = value[i] as string
    const short = SHORT_ESCAPES[ch]
    if (short !== undefined) {
      out += short
      continue
    }
    const unit = value.charCodeAt(i)
    // Python escapes everything outside 0x20..0x7e, DEL included.
    if (unit < 0x20 || unit > 0x7e) out += '\\u' + unit.toString(16).padStart(4, '0')
    else out += ch
  }
  return out + '"'
}

/** Compare two strings by Unicode code point, as Python sorts `dict` keys. */
export function compareCodePoints(a: string, b: string): number {
  const left = Array.from(a)
  const right = Array.from(b)
  const n = Math.min(left.length, right.length)
  for (let i = 0; i < n; i++) {
    const x = (left[i] as string).codePointAt(0) as number
    const y = (right[i] as string).codePointAt(0) as number
    if (x !== y) return x - y
  }
  return left.length - right.length
}

/**
 * Serialise a JSON value canonically.
 * @throws TypeError for values JSON cannot hold (undefined, functions, non-finite numbers).
 */
export function canonicalJson(value: unknown): string {
  if (value === null) return 'null'
  switch (typeof value) {
    case 'boolean':
      return value ? 'true' : 'false'
    case 'number':
      if (!Number.isFinite(value)) throw new TypeError('Canonical JSON accepts only finite numbers')
      return Object.is(value, -0) ? '0' : String(value)
    case 'string':
      return quoteAscii(value)
    case 'bigint':
      return value.toString()
    case 'object': {
      if (Array.isArray(value)) return '[' + value.map((item) => canonicalJson(item)).join(',') + ']'
      const record = value as Record<string, unknown>
      const keys = Object.keys(record)
        .filter((key) => record[key] !== undefined)
        .sort(compareCodePoints)
      return '{' + keys.map((key) => quoteAscii(key) + ':' + canonicalJson(record[key])).join(',') + '}'
    }
    default:
      throw new TypeError(`Canonical JSON cannot hold a value of type ${typeof value}`)
  }
}
