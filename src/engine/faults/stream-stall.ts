import { defineFault } from './fault.js'
import { afterOf, afterOrAtDefaultSchema, atSchema, type AtRule } from './stream-params.js'
import { EventTransform } from '../streams/event-transform.js'
import { deltaCutRule } from '../streams/delta-cut-rule.js'
import { DELTA_NAMES } from '../streams/deltas.js'
import { isEventStream } from '../streams/streamable.js'

/**
 * The stream goes silent: the client gets the first `after` events, then nothing more while the
 * connection stays open, until the client gives up (its own timeout) or, with `delay` > 0, for
 * `delay` seconds, after which the connection closes as in `stream_cut`. The stall begins when the
 * upstream sends anything past the `after`-th event; a stream that ends by itself first is
 * relayed whole and does not count as triggered. With `at`, `after` counts a model stream's
 * deltas of that kind (default 1, `stream_cut`). Non-SSE responses are relayed unchanged.
 */
export const streamStallFault = defineFault<'stream_stall', AtRule>({
  type: 'stream_stall',
  phase: 'on-response',
  needsBody: true,
  params: { after: afterOrAtDefaultSchema, at: atSchema.optional() },
  explain: (rule) => {
    const where = rule.at ? `stop the model stream after ${afterOf(rule)} of its ${DELTA_NAMES[rule.at]}` : `stop the event stream after ${afterOf(rule)} event(s)`
    return rule.delay > 0 ? `${where} and hold the connection ${rule.delay}s, then close it` : `${where} and hold the connection until the client gives up`
  },
  async apply({ rule, request, response, protocol }) {
    if (!response || !isEventStream(request, response)) return { action: { type: 'pass' }, injected: false }
    const after = afterOf(rule)
    const transform = new EventTransform(
      rule.at ? deltaCutRule(protocol.readDelta, rule.at, after, 'stall', rule.delay) : { stop: 'stall', holdSeconds: rule.delay, decide: (_piece, events) => (events >= after ? 'stop' : 'send') },
    )
    return { action: { type: 'stream', transform }, injected: false }
  },
})
