import { defineFault, jsonBody } from './fault.js'
import type { BaseRule } from '../schema/rule-base.js'

/**
 * `429 Too Many Requests` with the retry hint in both forms clients read: `Retry-After` in whole
 * seconds (rounded up, as the header has no fractions) and `retry-after-ms`, which the OpenAI and
 * Anthropic SDKs prefer. It never reaches the upstream.
 */
export const rateLimitFault = defineFault<'rate_limit', BaseRule>({
  type: 'rate_limit',
  phase: 'before-upstream',
  params: {},
  explain: (rule) => `answer 429 with Retry-After: ${formatSeconds(rule.delay)}`,
  async apply({ rule }) {
    const { headers, body } = jsonBody({
      error: { type: 'rate_limit_error', code: 'rate_limit_exceeded', message: `Rate limit exceeded. Retry after ${formatSeconds(rule.delay)}.` },
    })
    return {
      action: {
        type: 'respond',
        status: 429,
        headers: { ...headers, 'retry-after': String(Math.ceil(rule.delay)), 'retry-after-ms': String(Math.round(rule.delay * 1000)) },
        body,
      },
      injected: true,
      retryAfter: rule.delay,
    }
  },
})

function formatSeconds(seconds: number): string {
  return `${Number(seconds.toFixed(3))}s`
}
