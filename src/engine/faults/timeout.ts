import { defineFault, jsonBody } from './fault.js'
import type { BaseRule } from '../schema/rule-base.js'

/**
 * The upstream never answers. The request is held for `delay` seconds, as a gateway waits for a
 * dead upstream, then answered `504 Gateway Timeout` (on a model call, in the provider's error
 * shape: Anthropic's `timeout_error`). It never reaches the upstream.
 * A client whose own timeout is shorter than `delay` sees its own timeout error instead.
 */
export const timeoutFault = defineFault<'timeout', BaseRule>({
  type: 'timeout',
  phase: 'before-upstream',
  params: {},
  explain: (rule) => (rule.delay > 0 ? `hold the request ${rule.delay}s, then answer 504 Gateway Timeout` : 'answer 504 Gateway Timeout'),
  async apply({ rule, clock, signal, request, seed, route, key, protocol }) {
    await clock.sleep(rule.delay, signal)
    const shaped = protocol.shapeFailure?.(request, 'timeout', { identity: [seed, rule.name, route, key] })
    if (shaped) return { action: { type: 'respond', ...shaped }, injected: true }
    const { headers, body } = jsonBody({ error: { type: 'timeout', message: 'Upstream request timed out.' } })
    return { action: { type: 'respond', status: 504, headers, body }, injected: true }
  },
})
