import { z } from 'zod'
import { defineFault } from '../../engine/faults/fault.js'
import type { BaseRule } from '../../engine/schema/rule-base.js'
import { rpcErrorAnswer } from '../json-rpc-answer.js'
import { isModernRevision } from '../mcp-request.js'

/** The errors of the 2026-07-28 revision a server answers before running a request, and their codes. */
export const PROTOCOL_ERRORS = {
  /** The `Mcp-Method`/`Mcp-Name` headers disagree with the body. */
  header_mismatch: -32020,
  /** The request needs a client capability its `_meta` did not declare. */
  missing_capability: -32021,
  /** The server does not speak the revision the request claims. */
  unsupported_version: -32022,
} as const

export type ProtocolErrorName = keyof typeof PROTOCOL_ERRORS

export interface ProtocolErrorRule extends BaseRule {
  readonly error: ProtocolErrorName
  /** `unsupported_version`: the revisions the answer says the server speaks (default: the other era's, never the one requested). */
  readonly supported?: readonly string[] | undefined
  /** `missing_capability`: the capabilities the answer says the client must declare. */
  readonly capabilities: Readonly<Record<string, unknown>>
}

/** What a server that refuses `requested` speaks by default: the latest revision of the other era. */
function defaultSupported(requested: string): string[] {
  return isModernRevision(requested) ? ['2025-11-25'] : ['2026-07-28']
}

const NAMES = Object.keys(PROTOCOL_ERRORS) as [ProtocolErrorName, ...ProtocolErrorName[]]

/**
 * An MCP request refused by the protocol layer of a 2026-07-28 server, as that revision's SDK
 * server answers it: HTTP 400 with the JSON-RPC error (`-32020`, `-32021` with
 * `data.requiredCapabilities`, `-32022` with `data.supported` and `data.requested`, the revision
 * the request claimed); over stdio, the error line. The server never sees the request; a request
 * that is not an MCP request with an id is forwarded unchanged.
 */
export const protocolErrorFault = defineFault<'protocol_error', ProtocolErrorRule>({
  type: 'protocol_error',
  phase: 'before-upstream',
  params: {
    error: z.enum(NAMES, { error: `expected one of ${NAMES.join(', ')}` }),
    supported: z.array(z.string().min(1).max(64), { error: 'expected a list of protocol revisions, as ["2025-11-25"]' }).min(1).max(16).optional(),
    capabilities: z.record(z.string(), z.unknown(), { error: 'expected the capabilities the client lacks, as { elicitation: {} }' }).default({ elicitation: {} }),
  },
  explain: (rule) => `refuse the MCP request with the 2026-07-28 revision's ${rule.error} error (${PROTOCOL_ERRORS[rule.error]}, HTTP 400) instead of forwarding it`,
  async apply({ rule, request }) {
    const mcp = request.mcp
    if (!mcp || mcp.id === null) return { action: { type: 'pass' }, injected: false }
    const code = PROTOCOL_ERRORS[rule.error]
    const header = request.headers['mcp-protocol-version']
    const requested = mcp.protocolVersion ?? (typeof header === 'string' ? header : 'unknown')
    const { message, data } =
      rule.error === 'header_mismatch'
        ? { message: 'Header mismatch: the Mcp-Method header does not match the request body', data: undefined }
        : rule.error === 'missing_capability'
          ? { message: 'Missing required client capability', data: { requiredCapabilities: rule.capabilities } }
          : { message: `Unsupported protocol version: ${requested}`, data: { supported: [...(rule.supported ?? defaultSupported(requested))], requested } }
    const { headers, body } = rpcErrorAnswer(mcp.id, code, message, data)
    return { action: { type: 'respond', status: 400, headers, body }, injected: true }
  },
})
