/** The fault kinds the model-calls plug-in brings: a provider's own failures and its streams' events (docs/streams.md). */
import { overloadedFault } from './overloaded.js'
import { tokenLimitFault } from './token-limit.js'
import { duplicateEventFault } from './duplicate-event.js'
import { dropUsageFault } from './drop-usage.js'

export const MODEL_CALL_FAULTS = [overloadedFault, tokenLimitFault, duplicateEventFault, dropUsageFault] as const
