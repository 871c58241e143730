import { defineFault, jsonBody } from './fault.js'
import type { BaseRule } from '../schema/rule-base.js'
import { retryHeaders } from './retry-headers.js'

/**
 * `429 Too Many Requests` with the retry hint in both forms clients read: `Retry-After` in whole
 * seconds (rounded up, as the header has no fractions) and `retry-after-ms`, which the OpenAI and
 * Anthropic SDKs prefer. On a model call, the provider's own 429 (its error body and rate-limit
 * headers: `model-calls/provider-errors.ts`). It never reaches the upstream.
 */
export const rateLimitFault = defineFault<'rate_limit', BaseRule>({
  type: 'rate_limit',
  phase: 'before-upstream',
  params: {},
  // The headers as sent: `toolstorm rules` must not promise a wait the client never reads.
  explain: (rule) => {
    const hint = retryHeaders(rule.delay)
    return `answer 429 with Retry-After: ${hint['retry-after']} and retry-after-ms: ${hint['retry-after-ms']} (${formatSeconds(rule.delay)})`
  },
  async apply({ rule, request, seed, route, key, protocol }) {
    const shaped = protocol.shapeFailure?.(request, 'rate_limit', { retryAfter: rule.delay, identity: [seed, rule.name, route, key] })
    if (shaped) return { action: { type: 'respond', ...shaped }, injected: true, retryAfter: rule.delay }
    const { headers, body } = jsonBody({
      error: { type: 'rate_limit_error', code: 'rate_limit_exceeded', message: `Rate limit exceeded. Retry after ${formatSeconds(rule.delay)}.` },
    })
    return {
      action: {
        type: 'respond',
        status: 429,
        headers: { ...headers, ...retryHeaders(rule.delay) },
        body,
      },
      injected: true,
      retryAfter: rule.delay,
    }
  },
})

export function formatSeconds(seconds: number): string {
  return `${Number(seconds.toFixed(3))}s`
}
