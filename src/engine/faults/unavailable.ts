import { defineFault, jsonBody } from './fault.js'
import type { BaseRule } from '../schema/rule-base.js'

/**
 * `503 Service Unavailable`: a synthetic outage, never reaching the upstream. The status is the
 * same on every route; on a model call the body and headers are the provider's own (OpenAI's
 * `server_error`, Anthropic's `api_error`).
 */
export const unavailableFault = defineFault<'unavailable', BaseRule>({
  type: 'unavailable',
  phase: 'before-upstream',
  params: {},
  explain: () => 'answer 503 Service Unavailable (on a model call, in the provider\'s error shape)',
  async apply({ rule, request, seed, route, key, protocol }) {
    const shaped = protocol.shapeFailure?.(request, 'unavailable', { identity: [seed, rule.name, route, key] })
    if (shaped) return { action: { type: 'respond', ...shaped }, injected: true }
    const { headers, body } = jsonBody({ error: { type: 'service_unavailable', message: 'Service unavailable.' } })
    return { action: { type: 'respond', status: 503, headers, body }, injected: true }
  },
})
