/**
 * The rules file's `mcp` section: where MCP endpoints are and whether to recognise them without
 * being told. The MCP plug-in reads it (src/mcp/mcp-options.ts); see docs/mcp.md.
 *
 * @example
 * { "mcp": { "endpoints": ["/mcp"], "detect": true } }
 */
import { z } from 'zod'
import { parseRoutePattern } from '../route-pattern.js'

const endpointSchema = z.string().superRefine((spec, ctx) => {
  const parsed = parseRoutePattern(`POST ${spec}`)
  if (typeof parsed === 'string') ctx.addIssue({ code: 'custom', message: `expected an MCP endpoint path such as "/mcp" or "http://host/mcp" (${parsed})` })
})

export const mcpOptionsSchema = z.strictObject({
  /** Paths (MSW syntax, optionally with an origin) where every POST carries MCP messages. */
  endpoints: z.array(endpointSchema).max(100, { error: 'expected at most 100 MCP endpoints' }).default([]),
  /** Recognise MCP requests with no endpoint declared: POSTs sent with `Mcp-Method`, or that accept both JSON and an event stream. */
  detect: z.boolean({ error: 'expected true or false' }).default(true),
})

export type McpOptions = z.output<typeof mcpOptionsSchema>

export const DEFAULT_MCP_OPTIONS: McpOptions = { endpoints: [], detect: true }
