import { defineFault, jsonBody } from './fault.js'
import type { BaseRule } from '../schema/rule-base.js'

/**
 * `503 Service Unavailable`: a synthetic outage. On a model call, the provider's own internal
 * error (OpenAI's 500 `server_error`, Anthropic's 500 `api_error`). It never reaches the upstream.
 */
export const unavailableFault = defineFault<'unavailable', BaseRule>({
  type: 'unavailable',
  phase: 'before-upstream',
  params: {},
  explain: () => 'answer 503 Service Unavailable (on a model call, the provider\'s 500 error)',
  async apply({ rule, request, seed, route, key, shapeFailure }) {
    const shaped = shapeFailure?.(request, 'unavailable', { identity: [seed, rule.name, route, key] })
    if (shaped) return { action: { type: 'respond', ...shaped }, injected: true }
    const { headers, body } = jsonBody({ error: { type: 'service_unavailable', message: 'Service unavailable.' } })
    return { action: { type: 'respond', status: 503, headers, body }, injected: true }
  },
})
