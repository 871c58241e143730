/**
 * One line of MCP's stdio transport, as the wrapper needs to know it: a request (it becomes an
 * exchange), a notification or a response (relayed untouched), or something else (not JSON, a
 * batch: relayed untouched, and counted when the server wrote it). And the answer line an
 * exchange's client gets when what the engine answered is not a JSON-RPC message (a kernel
 * fault's HTTP answer, a replay refusal): the JSON-RPC error that stands for it.
 */
import type { JsonRpcId } from '../mcp/mcp-request.js'
import { BACKSLASH, CLOSE_BRACE, COLON, COMMA, OPEN_BRACE, QUOTE, skipSpace, skipString, skipValue } from './json-scan.js'

export type StdioMessage =
  | { readonly kind: 'request'; readonly id: JsonRpcId; readonly method: string; readonly message: Record<string, unknown> }
  | { readonly kind: 'notification'; readonly method: string; readonly message: Record<string, unknown> }
  | { readonly kind: 'response'; readonly id: JsonRpcId | null; readonly message: Record<string, unknown> }
  | { readonly kind: 'other' }

const OTHER: StdioMessage = { kind: 'other' }

function isId(value: unknown): value is JsonRpcId {
  return typeof value === 'string' || (typeof value === 'number' && Number.isFinite(value))
}

/** What `line` is. Never throws. */
export function readStdioLine(line: Uint8Array): StdioMessage {
  let message: unknown
  try {
    message = JSON.parse(Buffer.from(line.buffer, line.byteOffset, line.byteLength).toString('utf8'))
  } catch {
    return OTHER
  }
  if (message === null || typeof message !== 'object' || Array.isArray(message)) return OTHER
  const object = message as Record<string, unknown>
  if (object.jsonrpc !== '2.0') return OTHER
  const { id, method } = object
  if (typeof method === 'string') {
    if (id === undefined) return { kind: 'notification', method, message: object }
    return isId(id) ? { kind: 'request', id, method, message: object } : OTHER
  }
  if ('result' in object || 'error' in object) return { kind: 'response', id: isId(id) ? id : null, message: object }
  return OTHER
}

const ID = Buffer.from('id')
const METHOD = Buffer.from('method')
const RESULT = Buffer.from('result')
const ERROR = Buffer.from('error')
const JSONRPC = Buffer.from('jsonrpc')
const VERSION = Buffer.from('"2.0"')

/**
 * The id of the JSON-RPC response `line` is, found without decoding it: its top-level members are
 * stepped over (json-scan.ts) and only the id's value is read. Undefined when the line is not
 * plainly a response (no `result` or `error`, a `method`, no `"jsonrpc":"2.0"`, an id that is not a
 * plain number or string, a key or id written with escapes, not an object): `readStdioLine` decides
 * then. The wrapper hands a server's answer on this way, without a JSON.parse of the answer just
 * to find whose it is (the exchange's observers read it once). What the members' values hold is
 * not validated: a line whose envelope is a response's is taken as one.
 */
export function responseIdOf(line: Buffer): JsonRpcId | undefined {
  let at = skipSpace(line, 0)
  if (line[at] !== OPEN_BRACE) return undefined
  at = skipSpace(line, at + 1)
  let id: JsonRpcId | undefined
  let answer = false
  let version = false
  for (;;) {
    if (line[at] !== QUOTE) return undefined
    const keyEnd = skipString(line, at)
    if (keyEnd === -1) return undefined
    const key = line.subarray(at + 1, keyEnd - 1)
    if (key.includes(BACKSLASH)) return undefined
    at = skipSpace(line, keyEnd)
    if (line[at] !== COLON) return undefined
    const value = skipSpace(line, at + 1)
    const end = skipValue(line, value)
    if (end === -1 || end === value) return undefined
    if (key.equals(ID)) {
      const first = line[value]
      if (first === QUOTE) {
        const text = line.subarray(value + 1, end - 1)
        if (text.includes(BACKSLASH)) return undefined
        id = text.toString('utf8')
      } else if (first === 0x2d || (first !== undefined && first >= 0x30 && first <= 0x39)) {
        const number = Number(line.subarray(value, end).toString('latin1'))
        if (!Number.isFinite(number)) return undefined
        id = number
      } else return undefined
    } else if (key.equals(METHOD)) return undefined
    else if (key.equals(RESULT) || key.equals(ERROR)) answer = true
    else if (key.equals(JSONRPC)) version = line.subarray(value, end).equals(VERSION)
    at = skipSpace(line, end)
    if (line[at] === CLOSE_BRACE) break
    if (line[at] !== COMMA) return undefined
    at = skipSpace(line, at + 1)
  }
  // Nothing but space may follow the object.
  if (skipSpace(line, at + 1) !== line.length) return undefined
  return answer && version ? id : undefined
}

/** The request `message` with `params._meta[key] = value` added (params made when absent), as one line. */
export function withMeta(message: Record<string, unknown>, key: string, value: string): Buffer {
  const params = message.params
  if (params === undefined || params === null) message.params = { _meta: { [key]: value } }
  else if (typeof params === 'object' && !Array.isArray(params)) {
    const object = params as Record<string, unknown>
    const meta = object._meta
    object._meta = meta !== null && typeof meta === 'object' && !Array.isArray(meta) ? { ...(meta as Record<string, unknown>), [key]: value } : { [key]: value }
  }
  // By-position params have no _meta: the request goes as it came.
  return Buffer.from(JSON.stringify(message))
}

/** The JSON-RPC error code the MCP SDKs use for a request timeout. */
export const REQUEST_TIMEOUT = -32001
const INTERNAL_ERROR = -32603

/**
 * The line the client gets for an answer the engine made as an HTTP response (`status`, `body`):
 * the body itself when it is a JSON-RPC answer to `id` (MCP's faults, a drifted or replayed answer),
 * on one line; else the JSON-RPC error standing for it: a `504` (timeout) is the SDKs' request
 * timeout `-32001`, anything else (`rate_limit`'s 429, a replay refusal's 422) an internal error
 * `-32603` whose message is the answer's own and whose `data` names the HTTP status it stood for.
 * `error`: that JSON-RPC error's code when the line stands for the answer (null: the body itself).
 */
export function answerLine(id: JsonRpcId, status: number, body: Uint8Array | null): { line: Buffer; error: number | null } {
  let parsed: unknown = null
  if (body && body.length) {
    try {
      parsed = JSON.parse(Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8'))
    } catch {
      parsed = null
    }
  }
  if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) {
    const message = parsed as Record<string, unknown>
    if (message.jsonrpc === '2.0' && message.id === id && message.method === undefined && ('result' in message || 'error' in message)) {
      // JSON.stringify never writes a raw newline: a pretty-printed body comes out on one line.
      const text = Buffer.from(body!.buffer, body!.byteOffset, body!.byteLength)
      return { line: text.includes(0x0a) ? Buffer.from(JSON.stringify(message)) : Buffer.from(text), error: null }
    }
  }
  const said = messageOf(parsed)
  const code = status === 504 ? REQUEST_TIMEOUT : INTERNAL_ERROR
  const text = `${status === 504 ? 'Request timed out' : 'Internal error'}${said ? `: ${said}` : ''} (toolstorm: HTTP ${status})`
  return { line: Buffer.from(JSON.stringify({ jsonrpc: '2.0', id, error: { code, message: text, data: { toolstorm: { status } } } })), error: code }
}

/** The message of a toolstorm or provider error body (`{ error: { message } }`), if any. */
function messageOf(parsed: unknown): string | null {
  if (parsed === null || typeof parsed !== 'object') return null
  const error = (parsed as { error?: unknown }).error
  if (error === null || typeof error !== 'object') return null
  const message = (error as { message?: unknown }).message
  return typeof message === 'string' ? message.slice(0, 2000) : null
}
