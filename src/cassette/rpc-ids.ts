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
import { editJsonRpcAnswer } from '../engine/mcp/json-rpc-body.js'

/** Rewrites a replayed body (or one event of it) so its JSON-RPC answer carries the live id. */
export type RpcIdRewrite = (bytes: Buffer) => Buffer

/**
 * How to rewrite the answers of a recorded request for a live one, or null when there is nothing
 * to rewrite (not JSON-RPC, a notification, or the same id).
 */
export function rpcIdRewrite(recordedBody: StoredBody | null, live: JsonRpcId | null | undefined): RpcIdRewrite | null {
  if (live === null || live === undefined || recordedBody === null || recordedBody.truncated) return null
  const recorded = parseMcpRequest(storedBodyBytes(recordedBody))?.id ?? null
  if (recorded === null || recorded === live) return null
  const setLive = (answer: Record<string, unknown>) => {
    answer.id = live
    return true
  }
  return (bytes) => {
    const rewritten = editJsonRpcAnswer(bytes, recorded, setLive)
    return rewritten ? Buffer.from(rewritten.buffer, rewritten.byteOffset, rewritten.byteLength) : bytes
  }
}
