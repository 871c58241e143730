import { z } from 'zod'
import { defineFault, jsonBody } from '../../engine/faults/fault.js'
import type { BaseRule } from '../../engine/schema/rule-base.js'
import { retryHeaders } from '../../engine/faults/retry-headers.js'
import type { LimitWindow } from '../../engine/faults/failure-shape.js'
import { TokenWindows, WINDOW_SECONDS } from './token-window.js'

export interface TokenLimitRule extends BaseRule {
  /** Input plus output tokens the rule's calls may use per minute. */
  readonly tokensPerMinute: number
  /** Calls per minute, when the budget also counts requests. */
  readonly requestsPerMinute?: number | undefined
}

const budget = (what: string) => z.int({ error: `expected a positive integer (${what} per minute)` }).min(1, { error: `expected a positive integer (${what} per minute)` })

/** Per run and rule: the calls each window let through, in this process (with `--state`, Redis counts: `src/state/redis-token-quota.ts`). */
const windows = new TokenWindows()

/**
 * A provider's token quota: the calls the rule selects share `tokensPerMinute` (input plus output
 * tokens, counted from the real usage of the calls it let through) and, optionally,
 * `requestsPerMinute`, in fixed one-minute windows from the run's start. A call over the budget
 * gets the provider's 429 (`model-calls/provider-errors.ts`) with the limit, the remaining budget
 * and the window's reset in its rate-limit headers, and `retry-after(-ms)` until the reset; a call
 * within it goes to the upstream (not triggered). A route that is not a model call gets a generic
 * 429 with the same retry hint.
 */
export const tokenLimitFault = defineFault<'token_limit', TokenLimitRule>({
  type: 'token_limit',
  phase: 'before-upstream',
  params: { tokensPerMinute: budget('tokens'), requestsPerMinute: budget('requests').optional() },
  explain: (rule) => `answer 429 once the calls use ${rule.tokensPerMinute} tokens${rule.requestsPerMinute ? ` or ${rule.requestsPerMinute} requests` : ''} in a minute, until the minute ends`,
  async apply({ rule, request, seed, route, key, run, protocol }) {
    if (!run) return { action: { type: 'pass' }, injected: false }
    // With --state the shared store took the verdict when the call began; else this process's window.
    const verdict = run.quota ?? windows.of(run.identity, rule.name).take(run.elapsed, rule, run.record)
    const used = verdict.usage
    if (verdict.admitted) return { action: { type: 'pass' }, injected: false }
    const tokens: LimitWindow = { limit: rule.tokensPerMinute, remaining: Math.max(0, rule.tokensPerMinute - used.tokens), resetSeconds: used.resetSeconds }
    const requests: LimitWindow | undefined = rule.requestsPerMinute ? { limit: rule.requestsPerMinute, remaining: Math.max(0, rule.requestsPerMinute - used.requests), resetSeconds: used.resetSeconds } : undefined
    const exceeded = tokens.remaining === 0 ? 'tokens' : 'requests'
    const retryAfter = Math.min(WINDOW_SECONDS, Number(used.resetSeconds.toFixed(3)))
    const shaped = protocol.shapeFailure?.(request, 'rate_limit', { retryAfter, tokens, requests, exceeded, identity: [seed, rule.name, route, key] })
    if (shaped) return { action: { type: 'respond', ...shaped }, injected: true, retryAfter }
    const { headers, body } = jsonBody({ error: { type: 'rate_limit_error', code: 'rate_limit_exceeded', message: `Rate limit exceeded: ${exceeded} per minute. Retry after ${retryAfter}s.` } })
    return { action: { type: 'respond', status: 429, headers: { ...headers, ...retryHeaders(retryAfter) }, body }, injected: true, retryAfter }
  },
})
