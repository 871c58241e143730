/** The fault kinds the MCP plug-in brings: answers in MCP's own JSON-RPC shapes (docs/mcp.md). */
import { toolErrorFault } from './tool-error.js'
import { rpcErrorFault } from './rpc-error.js'
import { sessionExpiredFault } from './session-expired.js'
import { crashFault } from './crash.js'
import { protocolErrorFault } from './protocol-error.js'

export const MCP_FAULTS = [toolErrorFault, rpcErrorFault, sessionExpiredFault, crashFault, protocolErrorFault] as const
