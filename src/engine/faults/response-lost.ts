import { z } from 'zod'
import { defineFault, jsonBody } from './fault.js'
import type { BaseRule } from '../schema/rule-base.js'

export interface ResponseLostRule extends BaseRule {
  /** The status the client gets instead of the upstream's answer; absent: a connection reset. */
  readonly status?: number | undefined
}

/**
 * The acknowledgement is lost: the upstream receives the request, commits and answers in full;
 * then the client's connection is reset, so it cannot know the write happened. With `status`,
 * the client gets that error status instead (a gateway's 500 or 504 after the upstream committed:
 * on a model call in the provider's error shape), so it cannot know either.
 * An upstream error (non-2xx) is relayed unchanged and does not count as triggered: nothing was
 * committed, so there is no acknowledgement to lose.
 */
export const responseLostFault = defineFault<'response_lost', ResponseLostRule>({
  type: 'response_lost',
  phase: 'after-commit',
  params: { status: z.int({ error: 'expected an error status 400–599' }).min(400, { error: 'expected an error status 400–599' }).max(599, { error: 'expected an error status 400–599' }).optional() },
  explain: (rule) => `let the upstream commit, then ${rule.status === undefined ? 'reset the connection' : `answer ${rule.status}`} instead of relaying its 2xx answer`,
  async apply({ rule, response, request, seed, route, key, protocol }) {
    if (!response || response.status < 200 || response.status > 299) return { action: { type: 'pass' }, injected: false }
    // Wait for the whole answer: the upstream has finished its work when its body ends.
    await response.readBody()
    if (rule.status === undefined) return { action: { type: 'reset' }, injected: true }
    const shaped = protocol.shapeFailure?.(request, rule.status === 504 ? 'timeout' : 'unavailable', { identity: [seed, rule.name, route, key] })
    const { headers, body } = shaped ?? jsonBody({ error: { type: 'upstream_error', message: `The upstream failed (${rule.status}).` } })
    return { action: { type: 'respond', status: rule.status, headers, body }, injected: true }
  },
})
