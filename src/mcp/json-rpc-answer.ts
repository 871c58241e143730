/**
 * JSON-RPC answers toolstorm writes itself for MCP faults, in the shape the MCP SDK clients
 * parse: one JSON object per answer, carrying the request's id.
 */
import { isModernRevision, type JsonRpcId } from './mcp-request.js'

const encoder = new TextEncoder()
const JSON_HEADERS: Readonly<Record<string, string>> = { 'content-type': 'application/json' }

export interface JsonRpcAnswer {
  readonly headers: Record<string, string>
  readonly body: Uint8Array
}

function answer(message: unknown): JsonRpcAnswer {
  return { headers: { ...JSON_HEADERS }, body: encoder.encode(JSON.stringify(message)) }
}

/**
 * What a result carries for the revision its request claimed (`protocolVersion`): from 2026-07-28
 * on, its `resultType` (a client of that revision refuses a result without one).
 */
function resultShape(protocolVersion: string | undefined): { resultType?: 'complete' } {
  return isModernRevision(protocolVersion) ? { resultType: 'complete' } : {}
}

/** A tool result that reports a failure (`isError: true`), as a tool that ran and failed answers. */
export function toolErrorAnswer(id: JsonRpcId, text: string, protocolVersion?: string): JsonRpcAnswer {
  return answer({ jsonrpc: '2.0', id, result: { content: [{ type: 'text', text }], isError: true, ...resultShape(protocolVersion) } })
}

/**
 * A tool result carrying `value`: as `structuredContent` when it is an object, and as the JSON
 * text of its content (tools that declare an outputSchema answer both).
 */
export function toolResultAnswer(id: JsonRpcId, value: unknown, protocolVersion?: string): JsonRpcAnswer {
  const structured = value !== null && typeof value === 'object' && !Array.isArray(value) ? { structuredContent: value } : {}
  return answer({ jsonrpc: '2.0', id, result: { content: [{ type: 'text', text: JSON.stringify(value) }], ...structured, ...resultShape(protocolVersion) } })
}

/** A JSON-RPC error: the protocol failed (`-32603` internal error, `-32001` request timeout…). */
export function rpcErrorAnswer(id: JsonRpcId | null, code: number, message: string): JsonRpcAnswer {
  return answer({ jsonrpc: '2.0', id, error: { code, message } })
}
