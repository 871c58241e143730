/**
 * A server's request to the client during a Streamable HTTP call (sampling, elicitation), in
 * replay. It arrives on the call's event stream and the client answers it with a POST of its own;
 * the server waited for that POST before it sent the rest of the stream. A replayed stream waits
 * the same way: the events after the request play once the client's answer POST was replayed
 * (the client may be slower, or the recorded rest due at once), so the client's handler runs and
 * its answer is matched against the recorded one as every request is. An answer the cassette
 * refused (it differs from the recorded one) withholds the rest, which was made from the recorded
 * answer: the call gets a JSON-RPC error event naming why (stdio does the same:
 * stdio-transport.ts), and the verdict already failed on the POST.
 *
 * Keyed by the request's JSON-RPC id, which the replay sends as recorded, so the client answers
 * with it: with several sessions waiting on one id, the earliest stream is released first
 * (mcp/answer-waiters.ts).
 */
import { blockData } from '../../mcp/legacy-sse-stream.js'
import type { JsonRpcId } from '../../mcp/mcp-request.js'

/** What released a stream waiting for the client's answer (`AnswerWaiters`): null when the answer was replayed, else why it was refused. */
export type ClientAnswerOutcome = string | null

/** The id of the server's request (a `method` and an `id`) an event carries, or null for any other event. */
export function serverRequestIdOf(event: Uint8Array): JsonRpcId | null {
  const message = parsed(blockData(event))
  if (message === null || typeof message.method !== 'string') return null
  return isId(message.id) ? message.id : null
}

/** The id of the JSON-RPC answer (no `method`: a `result` or an `error`) a POST body holds, or null. */
export function clientAnswerIdOf(body: Uint8Array): JsonRpcId | null {
  const message = parsed(Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8'))
  if (message === null || 'method' in message || !('result' in message || 'error' in message)) return null
  return isId(message.id) ? message.id : null
}

/** The event that answers the live call `id` with the JSON-RPC error standing for `why`. */
export function withheldAnswerEvent(id: JsonRpcId, why: string): Uint8Array {
  return Buffer.from(`event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', id, error: { code: -32603, message: why } })}\n\n`)
}

function parsed(text: string): Record<string, unknown> | null {
  if (!text.trimStart().startsWith('{')) return null
  try {
    const value: unknown = JSON.parse(text)
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : null
  } catch {
    return null
  }
}

function isId(value: unknown): value is JsonRpcId {
  return typeof value === 'string' || (typeof value === 'number' && Number.isFinite(value))
}
