import { defineFault } from './fault.js'
import type { BaseRule } from '../schema/rule-base.js'

/**
 * The acknowledgement is lost: the upstream receives the request, commits and answers in full;
 * then the client's connection is reset, so it cannot know the write happened.
 * An upstream error (non-2xx) is relayed unchanged and does not count as triggered: nothing was
 * committed, so there is no acknowledgement to lose.
 */
export const responseLostFault = defineFault<'response_lost', BaseRule>({
  type: 'response_lost',
  phase: 'after-commit',
  params: {},
  explain: () => 'let the upstream commit, then reset the connection instead of relaying its 2xx answer',
  async apply({ response }) {
    if (!response || response.status < 200 || response.status > 299) return { action: { type: 'pass' }, injected: false }
    // Wait for the whole answer: the upstream has finished its work when its body ends.
    await response.readBody()
    return { action: { type: 'reset' }, injected: true }
  },
})
