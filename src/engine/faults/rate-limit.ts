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
  // The headers as sent: `toolstorm rules` must not promise a wait the client never reads.
  explain: (rule) => {
    const hint = retryHeaders(rule.delay)
    return `answer 429 with Retry-After: ${hint['retry-after']} and retry-after-ms: ${hint['retry-after-ms']} (${formatSeconds(rule.delay)})`
  },
  async apply({ rule }) {
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

/** `Retry-After` in whole seconds (rounded up: the header has no fractions) and `retry-after-ms`. */
function retryHeaders(seconds: number): { 'retry-after': string; 'retry-after-ms': string } {
  return { 'retry-after': String(Math.ceil(seconds)), 'retry-after-ms': String(Math.round(seconds * 1000)) }
}

function formatSeconds(seconds: number): string {
  return `${Number(seconds.toFixed(3))}s`
}
