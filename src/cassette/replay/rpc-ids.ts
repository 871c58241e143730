/**
 * JSON-RPC ids (MCP) differ from run to run: a client numbers its requests, a model may call tools
 * in another order. Replay never matches on a request's `id` (`match-key.ts` drops it), and a
 * replayed answer carries the live request's id instead of the recorded one, in a JSON body or in
 * each event of an event stream.
 */
import type { JsonRpcId } from '../../mcp/mcp-request.js'
import { parseMcpRequest } from '../../mcp/parse-mcp-request.js'
import type { StoredBody } from '../format/cassette-schema.js'
import { storedBodyBytes } from '../format/store-body.js'
import { withAnswerId } from '../../mcp/json-rpc-body.js'

/** Rewrites a replayed body (or one event of it) so its JSON-RPC answer carries the live id. */
export type RpcIdRewrite = (bytes: Buffer) => Buffer

/** The JSON-RPC id of a recorded request, or null (not JSON-RPC, a notification, a truncated body). */
export function recordedRequestId(recordedBody: StoredBody | null): JsonRpcId | null {
  if (recordedBody === null || recordedBody.truncated) return null
  return parseMcpRequest(storedBodyBytes(recordedBody))?.id ?? null
}

/**
 * How to rewrite the answers of the recorded request `recorded` for the live one, or null when
 * there is nothing to rewrite (no id on either side, or the same id).
 */
export function rpcIdRewrite(recorded: JsonRpcId | null, live: JsonRpcId | null | undefined): RpcIdRewrite | null {
  if (live === null || live === undefined || recorded === null || recorded === live) return null
  return (bytes) => {
    const rewritten = withAnswerId(bytes, recorded, live)
    return rewritten === bytes ? bytes : Buffer.from(rewritten.buffer, rewritten.byteOffset, rewritten.byteLength)
  }
}
