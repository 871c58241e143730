/**
 * What the rules file's `mcp` section (engine/schema/mcp-section.ts) decides: which requests may
 * carry an MCP message, from the request head alone, so only those wait for their body (see
 * docs/mcp.md).
 */
import { DEFAULT_MCP_OPTIONS, type McpOptions } from '../engine/schema/mcp-section.js'
import { parseRoutePattern, routePatternMatches, type RoutePattern } from '../engine/route-pattern.js'
import type { HeaderMap } from '../engine/http.js'
import type { McpRequest } from './mcp-request.js'
import { mcpRequestFromHeaders } from './parse-mcp-request.js'

/**
 * Bytes of a request body read before deciding what an MCP request is. A larger body is
 * forwarded unchanged and named as HTTP (`POST /mcp`); tool arguments rarely come near it.
 */
export const MCP_BODY_LIMIT = 1024 * 1024

/** Decides from a request head whether its body may be an MCP message (and so is read first). */
export class McpDetector {
  readonly #endpoints: RoutePattern[]
  readonly #detect: boolean

  constructor(options: McpOptions) {
    this.#endpoints = options.endpoints.map((spec) => parseRoutePattern(`POST ${spec}`) as RoutePattern)
    this.#detect = options.detect
  }

  /**
   * Whether this request may carry an MCP message. Only POSTs do; the rest pay one comparison.
   * `learned`: endpoints detected from the traffic (the legacy transport's, see `legacy-sse.ts`).
   */
  mayCarry(method: string, url: URL, headers: HeaderMap, learned?: { isEndpoint(url: URL): boolean }): boolean {
    if (method !== 'POST') return false
    if (this.#declared(method, url)) return fitsLimit(headers)
    if (!this.#detect) return false
    if (headers['mcp-method'] !== undefined || learned?.isEndpoint(url)) return fitsLimit(headers)
    // The Streamable HTTP transport's own signature: every client POST accepts both answers.
    const accept = headers.accept
    if (accept === undefined) return false
    const value = Array.isArray(accept) ? accept.join(',') : accept
    return value.includes('text/event-stream') && value.includes('application/json') && fitsLimit(headers)
  }

  #declared(method: string, url: URL): boolean {
    for (const pattern of this.#endpoints) if (routePatternMatches(pattern, method, url.origin, url.pathname)) return true
    return false
  }

  /**
   * For a POST whose body is not read (announced or found larger than the bound): the MCP message
   * its `Mcp-Method`/`Mcp-Name` headers name, so it still gets its tool's route name. Null for
   * other requests, or when detection is off and no endpoint declared it.
   */
  namedByHeaders(method: string, url: URL, headers: HeaderMap): McpRequest | null {
    if (method !== 'POST' || headers['mcp-method'] === undefined) return null
    if (!this.#detect && !this.#declared(method, url)) return null
    return mcpRequestFromHeaders(headers)
  }
}

/** A body announced larger than the bound is not read at all. */
function fitsLimit(headers: HeaderMap): boolean {
  const length = headers['content-length']
  return length === undefined || Array.isArray(length) || Number(length) <= MCP_BODY_LIMIT
}

const detectors = new WeakMap<McpOptions, McpDetector>()

/** The detector for a config's `mcp` section, built once per config. */
export function mcpDetector(options: McpOptions | undefined): McpDetector {
  // A config built by hand (not parsed) may have no `mcp` section: the defaults apply.
  options ??= DEFAULT_MCP_OPTIONS
  let detector = detectors.get(options)
  if (!detector) detectors.set(options, (detector = new McpDetector(options)))
  return detector
}
