/**
 * MCP as a plug-in: names a request by the JSON-RPC message its body carries (read first, up to
 * `MCP_BODY_LIMIT` bytes, only when its head says it may carry one), adds the MCP evidence
 * observer, and serves the legacy HTTP+SSE transport's exchanges. One instance per transport: it
 * keeps the legacy endpoints and session streams that transport has seen.
 *
 * @see docs/mcp.md
 */
import { parseMcpRequest } from '../engine/json-rpc/mcp-request.js'
import type { ExchangePlugin } from '../engine/plugin.js'
import { LegacySseSessions, legacyMcpRequest, legacySseTransport } from './legacy-sse.js'
import { MCP_BODY_LIMIT, mcpDetector } from './mcp-options.js'
import { withMcpEvidence } from './mcp-observer.js'

export function mcpPlugin(): ExchangePlugin {
  const sessions = new LegacySseSessions()
  return {
    name: 'mcp',
    nameRequest({ method, url, headers, hasBody }, storm) {
      // Only a POST may carry an MCP message: other requests pay one comparison.
      if (method !== 'POST') return null
      const detector = mcpDetector(storm.config.mcp)
      // A body announced over the bound is not read; the 2026-07-28 revision's headers may still name it.
      if (!hasBody || !detector.mayCarry(method, url, headers, sessions)) return { names: { mcp: detector.namedByHeaders(method, url, headers) } }
      return {
        bodyLimit: MCP_BODY_LIMIT,
        name(body) {
          if (body === null) return { mcp: detector.namedByHeaders(method, url, headers) }
          const session = headers['mcp-session-id']
          return { mcp: legacyMcpRequest(parseMcpRequest(body, typeof session === 'string' ? session : null), url, headers) }
        },
      }
    },
    observe: (inner, storm) => withMcpEvidence(inner, storm.tools),
    wrapTransport: (exchange, io) => legacySseTransport(sessions, exchange, io),
  }
}
