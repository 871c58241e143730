/**
 * Which spans are claims: the tool calls an instrumented agent already reports.
 *
 * - GenAI semantic conventions: `gen_ai.operation.name = execute_tool`, the tool in
 *   `gen_ai.tool.name`, its call id in `gen_ai.tool.call.id`.
 * - MCP client spans: `mcp.method.name = tools/call` on a CLIENT span, the tool in `gen_ai.tool.name`.
 * - The Vercel AI SDK's `ai.toolCall` spans (`ai.toolCall.name`, `ai.toolCall.id`).
 *
 * A claim is a failure when the span's status is ERROR or it sets `error.type`; else a success.
 * A tool-call span that names no tool is a claim on `(unnamed tool)`: it joins only the calls made
 * under it (no route has that name), so a failure it reports over a commit is still a silent commit.
 * Every other span is counted and ignored.
 */
import type { ClaimStatus } from '../engine/schema/claim-schema.js'
import { SPAN_KIND_CLIENT, type OtlpSpan } from './otlp-span.js'

export interface SpanClaim {
  readonly tool: string
  readonly toolCallId: string | null
  readonly status: ClaimStatus
}

/** The tool of a tool-call span that names none. */
export const UNNAMED_TOOL = '(unnamed tool)'

/** The claim a span makes, or null when it is not a tool call. */
export function spanClaim(span: OtlpSpan): SpanClaim | null {
  const attr = span.attributes
  let tool: unknown
  let callId: unknown
  if (attr.get('gen_ai.operation.name') === 'execute_tool') {
    tool = attr.get('gen_ai.tool.name') ?? (span.name.startsWith('execute_tool ') ? span.name.slice('execute_tool '.length) : undefined)
    callId = attr.get('gen_ai.tool.call.id')
  } else if (attr.get('mcp.method.name') === 'tools/call' && span.kind === SPAN_KIND_CLIENT) {
    tool = attr.get('gen_ai.tool.name') ?? (span.name.startsWith('tools/call ') ? span.name.slice('tools/call '.length) : undefined)
    callId = undefined
  } else if (span.name === 'ai.toolCall') {
    tool = attr.get('ai.toolCall.name')
    callId = attr.get('ai.toolCall.id')
  } else {
    return null
  }
  // A tool-call span without its tool's name still speaks for the calls made under it (the trace join).
  const name = typeof tool === 'string' && tool.trim() !== '' ? tool.trim().slice(0, 200) : UNNAMED_TOOL
  const failed = span.status === 'error' || (attr.get('error.type') !== undefined && attr.get('error.type') !== '')
  return {
    tool: name,
    toolCallId: typeof callId === 'string' && callId !== '' ? callId.slice(0, 200) : typeof callId === 'number' ? String(callId) : null,
    status: failed ? 'failure' : 'success',
  }
}
