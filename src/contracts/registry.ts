/**
 * Every contract unit, keyed by `type`: the kernel's (src/engine/contracts, reading calls, effects
 * and rules) and the guests' (model-call budgets, claims), as src/default-faults.ts composes faults.
 */
import { atMostCalls } from '../engine/contracts/at-most-calls.js'
import { atMostEffects } from '../engine/contracts/at-most-effects.js'
import { atMostModelCalls } from '../model-calls/contracts/at-most-model-calls.js'
import { atMostTokens } from '../model-calls/contracts/at-most-tokens.js'
import { maxRecoveryTokens } from '../model-calls/contracts/max-recovery-tokens.js'
import { claimsMatchEffects } from '../claims/claims-match-effects.js'
import { effectsRequireApproval } from '../engine/contracts/effects-require-approval.js'
import { noDuplicateEffects } from '../engine/contracts/no-duplicate-effects.js'
import { requireTriggered } from '../engine/contracts/require-triggered.js'
import { retryAfterRespected } from '../engine/contracts/retry-after-respected.js'

export const CONTRACT_UNITS = { requireTriggered, noDuplicateEffects, atMostCalls, atMostEffects, retryAfterRespected, atMostModelCalls, atMostTokens, maxRecoveryTokens, claimsMatchEffects, effectsRequireApproval } as const
