import { defineFault } from './fault.js'
import type { BaseRule } from '../schema/rule-base.js'

/** Wait `delay` seconds, then forward. The upstream runs exactly once, after the wait. */
export const latencyFault = defineFault<'latency', BaseRule>({
  type: 'latency',
  phase: 'before-upstream',
  params: {},
  explain: (rule) => `delay the request ${rule.delay}s, then forward it`,
  async apply({ rule, clock, signal }) {
    await clock.sleep(rule.delay, signal)
    return { action: { type: 'pass' }, injected: true }
  },
})
