/**
 * Every fault kind, keyed by its stable `type`. Adding a kind is one file plus one line here.
 */
import { ConfigError } from '../../errors.js'
import type { Fault } from './fault.js'
import { timeoutFault } from './timeout.js'
import { rateLimitFault } from './rate-limit.js'
import { unavailableFault } from './unavailable.js'
import { overloadedFault } from './overloaded.js'
import { tokenLimitFault } from './token-limit.js'
import { replaceFault } from './replace.js'
import { latencyFault } from './latency.js'
import { responseLostFault } from './response-lost.js'
import { schemaDriftFault } from './schema-drift.js'
import { resetFault } from './reset.js'
import { streamCutFault } from './stream-cut.js'
import { streamStallFault } from './stream-stall.js'
import { dropTerminalFault } from './drop-terminal.js'
import { duplicateEventFault } from './duplicate-event.js'
import { dropUsageFault } from './drop-usage.js'
import { slowStreamFault } from './slow-stream.js'
import { truncateFault } from './truncate.js'
import { toolErrorFault } from './tool-error.js'
import { rpcErrorFault } from './rpc-error.js'
import { sessionExpiredFault } from './session-expired.js'

export const FAULTS = [
  timeoutFault,
  rateLimitFault,
  unavailableFault,
  overloadedFault,
  tokenLimitFault,
  replaceFault,
  latencyFault,
  responseLostFault,
  schemaDriftFault,
  resetFault,
  streamCutFault,
  streamStallFault,
  dropTerminalFault,
  duplicateEventFault,
  dropUsageFault,
  slowStreamFault,
  truncateFault,
  toolErrorFault,
  rpcErrorFault,
  sessionExpiredFault,
] as const

export type FaultKind = (typeof FAULTS)[number]['type']

export const FAULT_KINDS = FAULTS.map((fault) => fault.type) as unknown as readonly [FaultKind, ...FaultKind[]]

const byKind = new Map<string, Fault<string, never>>(FAULTS.map((fault) => [fault.type, fault as unknown as Fault<string, never>]))

/** The fault implementing `kind`. */
export function faultFor(kind: string): Fault {
  const fault = byKind.get(kind)
  if (!fault) throw new ConfigError(`Failed to find a fault: unknown fault kind "${kind}". Use one of ${FAULT_KINDS.map((k) => `"${k}"`).join(', ')}.`)
  return fault as unknown as Fault
}
