import { defineFault } from '../../engine/faults/fault.js'
import type { BaseRule } from '../../engine/schema/rule-base.js'

/**
 * The MCP server dies in the middle of a call: it has taken the request (it may or may not have
 * committed its work) and its answer never comes; the client's connection ends as a dead
 * server's does. Over stdio (`toolstorm mcp`) the server process is killed (SIGKILL) as soon as
 * its stdin holds the call, and the wrapper ends as that process did: the client sees its server
 * exit (its reconnect path). Over HTTP the connection is reset once the server's answer head
 * arrives, its body unread (a JSON answer is dropped; an event stream is cut before its first
 * event). A request that is not an MCP request with an id is forwarded unchanged (not triggered).
 */
export const crashFault = defineFault<'crash', BaseRule>({
  type: 'crash',
  phase: 'after-commit',
  params: {},
  explain: () => 'let the MCP server take the call, then end the connection as a crashed server does, with no answer',
  async apply({ request }) {
    const mcp = request.mcp
    if (!mcp || mcp.id === null) return { action: { type: 'pass' }, injected: false }
    return { action: { type: 'reset' }, injected: true }
  },
})
