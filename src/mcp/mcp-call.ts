/**
 * The report's view of an MCP message (`call.mcp`, a kernel schema): built by the MCP plug-in when
 * it names the request (its evidence, which the storm puts on the call's record); its outcome is
 * filled in by the MCP observer (src/mcp/mcp-observer.ts) as the answer passes.
 */
import type { JsonValue } from '../json/canonical-json.js'
import type { Redactor } from '../redact/index.js'
import type { McpCall } from '../engine/schema/report.js'
import { targetIsUri, type McpRequest } from './mcp-request.js'

/** Arguments larger than this (as JSON) are not stored: reports hold up to 10,000 calls. */
export const MAX_STORED_ARGUMENTS = 4096

/** The report entry for `request`, its arguments redacted. */
export function mcpCallOf(request: McpRequest, redactor: Redactor): McpCall {
  let args: JsonValue | null = null
  if (request.arguments !== null && request.arguments !== undefined) {
    const text = JSON.stringify(request.arguments)
    if (text.length <= MAX_STORED_ARGUMENTS) args = redactor.json(request.arguments as JsonValue)
  }
  return {
    method: request.method,
    tool: request.target === null ? null : targetIsUri(request.method) ? redactor.url(request.target) : redactor.text(request.target),
    id: request.id,
    session: request.session === null ? null : request.session.slice(0, 200),
    arguments: args,
    outcome: null,
    errorCode: null,
  }
}
