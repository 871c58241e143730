import { z } from 'zod'
import { defineFault } from '../../engine/faults/fault.js'
import type { BaseRule } from '../../engine/schema/rule-base.js'
import { rpcErrorAnswer } from '../json-rpc-answer.js'

export interface RpcErrorRule extends BaseRule {
  readonly code: number
  readonly message: string
}

/**
 * An MCP request fails at the protocol level: the client gets a JSON-RPC error with `code`
 * (default -32603, internal error; -32001 is the SDKs' request timeout) and `message`. The server
 * never sees the request. A request that is not an MCP request with an id is forwarded unchanged.
 */
export const rpcErrorFault = defineFault<'rpc_error', RpcErrorRule>({
  type: 'rpc_error',
  phase: 'before-upstream',
  params: {
    code: z.int({ error: 'expected an integer JSON-RPC error code (for example -32603)' }).min(-2_147_483_648, { error: 'expected a 32-bit JSON-RPC error code' }).max(2_147_483_647, { error: 'expected a 32-bit JSON-RPC error code' }).default(-32603),
    message: z.string({ error: 'expected the error message (1–2000 characters)' }).min(1, { error: 'expected the error message (1–2000 characters)' }).max(2000, { error: 'expected the error message (1–2000 characters)' }).default('Internal error'),
  },
  explain: (rule) => `answer the MCP request with JSON-RPC error ${rule.code} ("${rule.message}") instead of forwarding it`,
  async apply({ rule, request }) {
    const mcp = request.mcp
    if (!mcp || mcp.id === null) return { action: { type: 'pass' }, injected: false }
    const { headers, body } = rpcErrorAnswer(mcp.id, rule.code, rule.message)
    return { action: { type: 'respond', status: 200, headers, body }, injected: true }
  },
})
