/**
 * MCP requests in-process: the MCP message a fetch `Request` carries, read from a clone of its
 * body (in-process bodies are read whole anyway), when its head says it may carry one.
 *
 * @see docs/mcp.md
 */
import { MCP_BODY_LIMIT, mcpDetector } from '../engine/mcp/mcp-options.js'
import { parseMcpRequest, type McpRequest } from '../engine/json-rpc/mcp-request.js'
import { legacyMcpRequest, type LegacySseSessions } from '../engine/mcp/legacy-sse.js'
import type { HeaderMap } from '../engine/http.js'
import type { Storm } from '../engine/storm.js'

/**
 * The body of `request`, read with `read` (once: the caller keeps it for the exchange), and the
 * MCP message it carries (null: not one, or over the bound). Null at once, with no promise to wait
 * for, when its head says it cannot carry one, so other requests keep their timing. `legacy`: the
 * legacy HTTP+SSE endpoints learned so far (their POSTs are read too, named with their session);
 * absent in MSW handlers, through which the SDK's legacy client cannot connect (docs/mcp.md).
 */
export function fetchMcpRequest(storm: Storm, request: Request, url: URL, headers: HeaderMap, read: () => Promise<ArrayBuffer>, legacy?: LegacySseSessions): Promise<{ body: Buffer; mcp: McpRequest | null }> | null {
  if (!request.body || request.method !== 'POST') return null
  const detector = mcpDetector(storm.config.mcp)
  if (!detector.mayCarry(request.method, url, headers, legacy)) {
    // Announced over the bound: not read, but the 2026-07-28 revision's headers may name it.
    const named = detector.namedByHeaders(request.method, url, headers)
    return named && read().then((buffer) => ({ body: Buffer.from(buffer), mcp: named }))
  }
  return read().then((buffer) => {
    const body = Buffer.from(buffer)
    if (body.byteLength > MCP_BODY_LIMIT) return { body, mcp: detector.namedByHeaders(request.method, url, headers) }
    const session = headers['mcp-session-id']
    const mcp = parseMcpRequest(body, typeof session === 'string' ? session : null)
    return { body, mcp: legacy ? legacyMcpRequest(mcp, url, headers) : mcp }
  })
}
