/**
 * MCP as a plug-in: names a request by the JSON-RPC message its body carries (read first, up to
 * `MCP_BODY_LIMIT` bytes, only when its head says it may carry one) and the `outputSchema` its
 * tool declared, adds the MCP evidence observer, serves the legacy HTTP+SSE transport's exchanges
 * and reads the answer that ends a request's stream. It brings MCP's faults (`tool_error`,
 * `rpc_error`, `session_expired`). One instance per transport: it
 * keeps the legacy endpoints and session streams that transport has seen.
 *
 * @see docs/mcp.md
 */
import { mcpRouteName, type McpRequest } from './mcp-request.js'
import { mcpCallOf } from './mcp-call.js'
import { headerMismatchOf, parseMcpRequest } from './parse-mcp-request.js'
import type { ExchangePlugin } from '../engine/plugin.js'
import type { RequestReading } from '../engine/request-reading.js'
import { LegacySseSessions, legacyMcpRequest, legacySseTransport } from './legacy-sse.js'
import { MCP_BODY_LIMIT, mcpDetector } from './mcp-options.js'
import { withMcpEvidence } from './mcp-observer.js'
import { createMcpAnswerReader } from './mcp-answer-reader.js'
import { endpointOf, toolCatalogOf } from './tool-catalog.js'
import { MCP_FAULTS } from './faults/mcp-faults.js'
import { toolResultAnswer } from './json-rpc-answer.js'
import { editToolAnswer } from './tool-answer-edit.js'
import { mcpRouteProblem } from './mcp-methods.js'
import { inputRoundsOf } from './input-rounds.js'
import type { McpCall } from '../engine/schema/report.js'

/** A request the plug-in looked at that carries no MCP message: routed as plain HTTP. */
const NOT_MCP: RequestReading = {}

export function mcpPlugin(): ExchangePlugin {
  const sessions = new LegacySseSessions()
  return {
    name: 'mcp',
    faults: MCP_FAULTS,
    checkRoute: mcpRouteProblem,
    nameRequest({ method, url, headers, hasBody }, storm) {
      // Only a POST may carry an MCP message: other requests pay one comparison.
      if (method !== 'POST') return null
      const detector = mcpDetector(storm.config.mcp)
      // The message names the route and fills the call's `mcp` record; a tool call carries the
      // `outputSchema` its tool declared (schema_drift breaks it).
      const named = (mcp: McpRequest | null, headerMismatch?: McpCall['headerMismatch'] | null): RequestReading => {
        if (mcp === null) return NOT_MCP
        const evidence = mcpCallOf(mcp, storm.redactor)
        if (headerMismatch) evidence.headerMismatch = headerMismatch
        // A retry bringing the input an `input_required` answer asked for: the next round of that
        // call, whose entry then lists the rounds before it (a call of its own if it cannot join).
        const asking = mcp.answersInput ? inputRoundsOf(storm).take(mcp) : undefined
        const rounds: McpCall['rounds'] = asking && [...(asking.call.rounds ?? []), { id: asking.call.id ?? '', outcome: 'input_required' }]
        return {
          route: mcpRouteName(mcp),
          details: { mcp },
          evidence: { mcp: evidence },
          traceparent: mcp.traceparent,
          outputSchema: mcp.method === 'tools/call' && mcp.target !== null ? toolCatalogOf(storm).outputSchema(endpointOf(url), mcp.target) : null,
          ...(asking ? { joins: { exchange: asking.exchangeId, evidence: { mcp: { ...evidence, rounds } } } } : {}),
        }
      }
      // A body announced over the bound is not read; the 2026-07-28 revision's headers may still name it.
      if (!hasBody || !detector.mayCarry(method, url, headers, sessions)) return { reading: named(detector.namedByHeaders(method, url, headers)) }
      return {
        bodyLimit: MCP_BODY_LIMIT,
        name(body) {
          if (body === null) return named(detector.namedByHeaders(method, url, headers))
          const session = headers['mcp-session-id']
          const mcp = legacyMcpRequest(parseMcpRequest(body, typeof session === 'string' ? session : null), url, headers)
          // Routed by the body (what the server acts on); headers that disagree with it are reported.
          return named(mcp, mcp && headerMismatchOf(mcp, headers))
        },
      }
    },
    observe: (inner, storm) => withMcpEvidence(inner, toolCatalogOf(storm), inputRoundsOf(storm)),
    wrapTransport: (exchange, io) => legacySseTransport(sessions, exchange, io),
    // `replace` on a tool call answers as the tool: its result, with the request's id.
    shapeResult: (request, value) => (request.mcp && request.mcp.id !== null ? toolResultAnswer(request.mcp.id, value, request.mcp.protocolVersion) : null),
    // `schema_drift` on a tool call drifts its structured content, not the JSON-RPC envelope.
    editAnswer: editToolAnswer,
    // The answer to the request's id ends its stream: a client may leave right after it.
    readAnswer: (request, contentType, onAnswer) => {
      const id = request.mcp?.id
      return id === null || id === undefined ? null : createMcpAnswerReader(id, contentType, onAnswer)
    },
  }
}
