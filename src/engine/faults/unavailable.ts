import { defineFault, jsonBody } from './fault.js'
import type { BaseRule } from '../schema/rule-base.js'

/** `503 Service Unavailable`: a synthetic outage. It never reaches the upstream. */
export const unavailableFault = defineFault<'unavailable', BaseRule>({
  type: 'unavailable',
  phase: 'before-upstream',
  params: {},
  explain: () => 'answer 503 Service Unavailable',
  async apply() {
    const { headers, body } = jsonBody({ error: { type: 'service_unavailable', message: 'Service unavailable.' } })
    return { action: { type: 'respond', status: 503, headers, body }, injected: true }
  },
})
