/**
 * JSON-RPC ids (MCP) differ from run to run: a client numbers its requests, a model may call tools
 * in another order. Replay never matches on a request's `id` (`match-key.ts` drops it), and a
 * replayed answer carries the live request's id instead of the recorded one, in a JSON body or in
 * each event of an event stream.
 */
import type { JsonRpcId } from '../engine/mcp/mcp-request.js'
import { parseMcpRequest } from '../engine/mcp/mcp-request.js'
import type { StoredBody } from '../engine/schema/cassette.js'
import { storedBodyBytes } from './store-body.js'

/** Rewrites a replayed body (or one event of it) so its JSON-RPC answer carries the live id. */
export type RpcIdRewrite = (bytes: Buffer) => Buffer

function isAnswer(value: unknown, id: JsonRpcId): value is { id: JsonRpcId } {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false
  const message = value as Record<string, unknown>
  return message.jsonrpc === '2.0' && message.id === id && ('result' in message || 'error' in message)
}

/** `text` (one JSON document) with the answer's id set to `live`, or null when it is not the recorded answer. */
function rewriteJson(text: string, recorded: JsonRpcId, live: JsonRpcId): string | null {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return null
  }
  if (!isAnswer(value, recorded)) return null
  value.id = live
  return JSON.stringify(value)
}

/**
 * How to rewrite the answers of a recorded request for a live one, or null when there is nothing
 * to rewrite (not JSON-RPC, a notification, or the same id).
 */
export function rpcIdRewrite(recordedBody: StoredBody | null, live: JsonRpcId | null | undefined): RpcIdRewrite | null {
  if (live === null || live === undefined || recordedBody === null || recordedBody.truncated) return null
  const recorded = parseMcpRequest(storedBodyBytes(recordedBody))?.id ?? null
  if (recorded === null || recorded === live) return null
  return (bytes) => {
    const text = bytes.toString('utf8')
    const whole = rewriteJson(text, recorded, live)
    if (whole !== null) return Buffer.from(whole)
    // An event stream: the answer is the JSON of a `data:` line.
    let changed = false
    const lines = text.split('\n').map((line) => {
      if (!line.startsWith('data:')) return line
      const rewritten = rewriteJson(line.slice(5), recorded, live)
      if (rewritten === null) return line
      changed = true
      return `data: ${rewritten}${line.endsWith('\r') ? '\r' : ''}`
    })
    return changed ? Buffer.from(lines.join('\n')) : bytes
  }
}
