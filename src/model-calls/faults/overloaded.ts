import { defineFault, jsonBody } from '../../engine/faults/fault.js'
import type { BaseRule } from '../../engine/schema/rule-base.js'
import { retryHeaders } from '../../engine/faults/retry-headers.js'
import { formatSeconds } from '../../engine/faults/rate-limit.js'

/**
 * The provider is overloaded: Anthropic's `529 overloaded_error`, OpenAI's `503` "engine is
 * currently overloaded"; on another route a `503` saying so. With `delay` > 0 the answer carries
 * `Retry-After`/`retry-after-ms`; without, the client falls back to its own backoff. It never
 * reaches the upstream.
 */
export const overloadedFault = defineFault<'overloaded', BaseRule>({
  type: 'overloaded',
  phase: 'before-upstream',
  params: {},
  explain: (rule) =>
    `answer as an overloaded provider (Anthropic 529 overloaded_error, OpenAI 503; 503 elsewhere)${rule.delay > 0 ? ` with Retry-After: ${retryHeaders(rule.delay)['retry-after']} and retry-after-ms: ${retryHeaders(rule.delay)['retry-after-ms']} (${formatSeconds(rule.delay)})` : ''}`,
  async apply({ rule, request, seed, route, key, protocol }) {
    const retryAfter = rule.delay > 0 ? rule.delay : undefined
    const shaped = protocol.shapeFailure?.(request, 'overloaded', { retryAfter, identity: [seed, rule.name, route, key] })
    const outcome = retryAfter === undefined ? {} : { retryAfter }
    if (shaped) return { action: { type: 'respond', ...shaped }, injected: true, ...outcome }
    const { headers, body } = jsonBody({ error: { type: 'overloaded', message: 'Service overloaded. Please try again later.' } })
    return { action: { type: 'respond', status: 503, headers: { ...headers, ...retryHeaders(retryAfter) }, body }, injected: true, ...outcome }
  },
})
