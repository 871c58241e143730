/**
 * The faults the kernel brings: those that act on any HTTP exchange or any event stream. The
 * protocol-specific ones come with their plug-ins (`ExchangePlugin.faults`: MCP's in src/mcp,
 * model providers' in src/model-calls); `src/default-faults.ts` assembles the full list.
 */
import { timeoutFault } from './timeout.js'
import { rateLimitFault } from './rate-limit.js'
import { unavailableFault } from './unavailable.js'
import { replaceFault } from './replace.js'
import { latencyFault } from './latency.js'
import { responseLostFault } from './response-lost.js'
import { schemaDriftFault } from './schema-drift.js'
import { resetFault } from './reset.js'
import { streamCutFault } from './stream-cut.js'
import { streamStallFault } from './stream-stall.js'
import { dropTerminalFault } from './drop-terminal.js'
import { slowStreamFault } from './slow-stream.js'
import { truncateFault } from './truncate.js'

export const KERNEL_FAULTS = [
  timeoutFault,
  rateLimitFault,
  unavailableFault,
  replaceFault,
  latencyFault,
  responseLostFault,
  schemaDriftFault,
  resetFault,
  streamCutFault,
  streamStallFault,
  dropTerminalFault,
  slowStreamFault,
  truncateFault,
] as const
