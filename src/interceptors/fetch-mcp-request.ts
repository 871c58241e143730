/**
 * MCP requests in-process: the MCP message a fetch `Request` carries, read from a clone of its
 * body (in-process bodies are read whole anyway), when its head says it may carry one.
 *
 * @see docs/mcp.md
 */
import { MCP_BODY_LIMIT, mcpDetector } from '../engine/mcp/mcp-options.js'
import { parseMcpRequest, type McpRequest } from '../engine/mcp/mcp-request.js'
import type { HeaderMap } from '../engine/faults/fault.js'
import type { Storm } from '../engine/storm.js'

/** The MCP message of `request`, or null (not a candidate, not one, or over the bound). */
export async function fetchMcpRequest(storm: Storm, request: Request, url: URL, headers: HeaderMap): Promise<McpRequest | null> {
  if (!request.body || !mcpDetector(storm.config.mcp).mayCarry(request.method, url, headers)) return null
  const bytes = new Uint8Array(await request.clone().arrayBuffer())
  if (bytes.length > MCP_BODY_LIMIT) return null
  const session = headers['mcp-session-id']
  return parseMcpRequest(bytes, typeof session === 'string' ? session : null)
}
