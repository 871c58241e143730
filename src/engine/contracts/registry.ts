/** Every contract unit, keyed by `type`. */
import { atMostCalls } from './at-most-calls.js'
import { atMostEffects } from './at-most-effects.js'
import { atMostModelCalls } from './at-most-model-calls.js'
import { atMostTokens } from './at-most-tokens.js'
import { maxRecoveryTokens } from './max-recovery-tokens.js'
import { claimsMatchEffects } from './claims-match-effects.js'
import { effectsRequireApproval } from './effects-require-approval.js'
import { noDuplicateEffects } from './no-duplicate-effects.js'
import { requireTriggered } from './require-triggered.js'
import { retryAfterRespected } from './retry-after-respected.js'

export const CONTRACT_UNITS = { requireTriggered, noDuplicateEffects, atMostCalls, atMostEffects, retryAfterRespected, atMostModelCalls, atMostTokens, maxRecoveryTokens, claimsMatchEffects, effectsRequireApproval } as const
