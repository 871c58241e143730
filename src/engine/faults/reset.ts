import { defineFault } from './fault.js'
import type { BaseRule } from '../schema/rule-base.js'

/** The connection is reset before anything is forwarded: the upstream never sees the request. */
export const resetFault = defineFault<'reset', BaseRule>({
  type: 'reset',
  phase: 'before-upstream',
  params: {},
  explain: () => 'reset the connection before the upstream sees the request',
  async apply() {
    return { action: { type: 'reset' }, injected: true }
  },
})
