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

/**
 * The MCP message of `request` (null: not one, or over the bound); null at once, with no promise
 * to wait for, when its head says it cannot carry one, so other requests keep their timing.
 */
export function fetchMcpRequest(storm: Storm, request: Request, url: URL, headers: HeaderMap): Promise<McpRequest | null> | null {
  if (!request.body || !mcpDetector(storm.config.mcp).mayCarry(request.method, url, headers)) return null
  return request
    .clone()
    .arrayBuffer()
    .then((buffer) => {
      if (buffer.byteLength > MCP_BODY_LIMIT) return null
      const session = headers['mcp-session-id']
      return parseMcpRequest(new Uint8Array(buffer), typeof session === 'string' ? session : null)
    })
}
