import { defineFault } from '../../engine/faults/fault.js'
import type { BaseRule } from '../../engine/schema/rule-base.js'
import { rpcErrorAnswer } from '../json-rpc-answer.js'

/** The code and message the MCP TypeScript SDK's server sends for an unknown session. */
export const SESSION_NOT_FOUND = { code: -32001, message: 'Session not found' } as const

/**
 * The MCP session is gone: `404 Not Found` with the JSON-RPC error a server sends for an unknown
 * `Mcp-Session-Id`, so the client must initialize a new session. The server never sees the
 * request. Only requests that carry a session id are answered so (others are forwarded, not
 * triggered): a stateless server has no session to lose.
 */
export const sessionExpiredFault = defineFault<'session_expired', BaseRule>({
  type: 'session_expired',
  phase: 'before-upstream',
  params: {},
  explain: () => 'answer 404 Session not found to an MCP request on a session, so the client must initialize again',
  async apply({ request }) {
    const mcp = request.mcp
    if (!mcp || mcp.session === null) return { action: { type: 'pass' }, injected: false }
    const { headers, body } = rpcErrorAnswer(mcp.id, SESSION_NOT_FOUND.code, SESSION_NOT_FOUND.message)
    return { action: { type: 'respond', status: 404, headers, body }, injected: true }
  },
})
