/**
 * Put `params._meta[key] = value` into a JSON-RPC request line by splicing bytes into it, instead
 * of serialising the whole message again: a `write_file` with a megabyte of content costs the
 * same as a `ping`. The line was parsed already (its `message`), so what it holds is known; the
 * scan only finds where: it steps over strings with `indexOf` and over values by their brackets.
 *
 * Null when the line is not one this can splice safely (params by position, a `_meta` that is not
 * an object or already holds `key`, keys written with escapes): the caller serialises then.
 */
import { CLOSE_BRACE, COLON, COMMA, OPEN_BRACE, QUOTE, skipSpace, skipString, skipValue } from './json-scan.js'

/**
 * Where the value of the member named `name` of the object opening at `open` starts, and where the
 * object closes (-1 for what is not found). JSON.parse keeps the last of duplicate keys, so the
 * scan stops at the first one only when the quoted name does not occur again in the rest of the
 * line (one native search): a large value after it is then never stepped through.
 */
function findMember(line: Buffer, open: number, name: Buffer, quoted: Buffer): { value: number; close: number } {
  let value = -1
  let at = skipSpace(line, open + 1)
  if (line[at] === CLOSE_BRACE) return { value, close: at }
  for (;;) {
    if (line[at] !== QUOTE) return { value: -1, close: -1 }
    const keyEnd = skipString(line, at)
    if (keyEnd === -1) return { value: -1, close: -1 }
    const matches = keyEnd - at - 2 === name.length && line.compare(name, 0, name.length, at + 1, keyEnd - 1) === 0
    at = skipSpace(line, keyEnd)
    if (line[at] !== COLON) return { value: -1, close: -1 }
    at = skipSpace(line, at + 1)
    if (matches) {
      value = at
      if (line.indexOf(quoted, keyEnd) === -1) return { value, close: 0 }
    }
    at = skipValue(line, at)
    if (at === -1) return { value: -1, close: -1 }
    at = skipSpace(line, at)
    if (line[at] === CLOSE_BRACE) return { value, close: at }
    if (line[at] !== COMMA) return { value: -1, close: -1 }
    at = skipSpace(line, at + 1)
  }
}

const PARAMS = Buffer.from('params')
const QUOTED_PARAMS = Buffer.from('"params"')
const META = Buffer.from('_meta')
const QUOTED_META = Buffer.from('"_meta"')

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value)
}

/** `line` (whose parsed `message` is given) with `params._meta[key] = value`, or null (see above). */
export function spliceMeta(line: Buffer, message: Record<string, unknown>, key: string, value: string): Buffer | null {
  const member = `${JSON.stringify(key)}:${JSON.stringify(value)}`
  const open = skipSpace(line, 0)
  if (line[open] !== OPEN_BRACE) return null
  const params = message.params
  if (params === undefined) {
    // No params member in any spelling (an escaped key would have parsed as one): add it at the end.
    const top = findMember(line, open, PARAMS, QUOTED_PARAMS)
    if (top.close <= 0 || top.value !== -1) return null
    return insert(line, top.close, `${skipSpace(line, open + 1) === top.close ? '' : ','}"params":{"_meta":{${member}}}`)
  }
  if (!isObject(params)) return null
  const top = findMember(line, open, PARAMS, QUOTED_PARAMS)
  if (top.value === -1 || line[top.value] !== OPEN_BRACE) return null
  const meta = params._meta
  if (meta === undefined) {
    // No _meta member in any spelling: it goes first, and nothing else in params is read.
    const empty = line[skipSpace(line, top.value + 1)] === CLOSE_BRACE
    return insert(line, top.value + 1, `"_meta":{${member}}${empty ? '' : ','}`)
  }
  if (!isObject(meta) || Object.hasOwn(meta, key)) return null
  const inParams = findMember(line, top.value, META, QUOTED_META)
  if (inParams.value === -1 || line[inParams.value] !== OPEN_BRACE) return null
  const empty = line[skipSpace(line, inParams.value + 1)] === CLOSE_BRACE
  return insert(line, inParams.value + 1, empty ? member : `${member},`)
}

function insert(line: Buffer, at: number, text: string): Buffer {
  const added = Buffer.from(text)
  return Buffer.concat([line.subarray(0, at), added, line.subarray(at)], line.length + added.length)
}
