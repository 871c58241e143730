import { z } from 'zod'
import { defineFault } from '../../engine/faults/fault.js'
import type { BaseRule } from '../../engine/schema/rule-base.js'
import { toolErrorAnswer } from '../json-rpc-answer.js'

export interface ToolErrorRule extends BaseRule {
  readonly message: string
}

/**
 * An MCP tool fails: the client gets a tool result with `isError: true` and `message` as its
 * text content, as a tool that ran and failed answers. The tool server never sees the call.
 * A request that is not an MCP request with an id is forwarded unchanged (not triggered).
 */
export const toolErrorFault = defineFault<'tool_error', ToolErrorRule>({
  type: 'tool_error',
  phase: 'before-upstream',
  params: {
    message: z.string({ error: 'expected the error text (1–2000 characters)' }).min(1, { error: 'expected the error text (1–2000 characters)' }).max(2000, { error: 'expected the error text (1–2000 characters)' }).default('The tool failed.'),
  },
  explain: (rule) => `answer the MCP request with a tool result marked isError ("${rule.message}") instead of calling the tool`,
  async apply({ rule, request }) {
    const mcp = request.mcp
    if (!mcp || mcp.id === null) return { action: { type: 'pass' }, injected: false }
    const { headers, body } = toolErrorAnswer(mcp.id, rule.message, mcp.protocolVersion)
    return { action: { type: 'respond', status: 200, headers, body }, injected: true }
  },
})
