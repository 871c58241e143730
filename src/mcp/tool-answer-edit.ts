/**
 * Where a fault that edits an answer's payload (`schema_drift`) edits an MCP tool's answer: its
 * `result.structuredContent`, in a JSON answer or in the answer's event of an event stream. Only
 * there: drifting `id` or `jsonrpc` would break the protocol, not the tool's output.
 */
import type { RequestView } from '../engine/http.js'
import { editJsonRpcAnswer } from './json-rpc-body.js'

/**
 * `body` with the structured content of the answer to `request` edited by `edit`; null when the
 * answer has none or `edit` changed nothing; undefined when `request` is no MCP request.
 */
export function editToolAnswer(request: RequestView, body: Uint8Array, edit: (payload: object) => boolean): Uint8Array | null | undefined {
  if (!request.mcp) return undefined
  const id = request.mcp.id
  if (id === null) return null
  return editJsonRpcAnswer(body, id, (answer) => {
    const target = structuredContentOf(answer)
    return target !== null && edit(target)
  })
}

/** The `result.structuredContent` object of a JSON-RPC answer, or null when it has none. */
function structuredContentOf(message: Record<string, unknown>): object | null {
  const result = message.result
  if (result === null || typeof result !== 'object' || Array.isArray(result)) return null
  const structured = (result as Record<string, unknown>).structuredContent
  return structured !== null && typeof structured === 'object' ? structured : null
}
