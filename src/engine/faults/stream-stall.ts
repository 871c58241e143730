import { defineFault } from './fault.js'
import { afterSchema, type AfterRule } from './stream-params.js'
import { EventTransform } from '../streams/event-transform.js'
import { isEventStream } from '../streams/streamable.js'

/**
 * The stream goes silent: the client gets the first `after` events, then nothing more while the
 * connection stays open, until the client gives up (its own timeout) or, with `delay` > 0, for
 * `delay` seconds, after which the connection closes as in `stream_cut`. The stall begins when the
 * upstream sends anything past the `after`-th event; a stream that ends by itself first is
 * relayed whole and does not count as triggered. Non-SSE responses are relayed unchanged.
 */
export const streamStallFault = defineFault<'stream_stall', AfterRule>({
  type: 'stream_stall',
  phase: 'on-response',
  needsBody: true,
  params: { after: afterSchema },
  explain: (rule) =>
    rule.delay > 0 ? `stop the event stream after ${rule.after} event(s) and hold the connection ${rule.delay}s, then close it` : `stop the event stream after ${rule.after} event(s) and hold the connection until the client gives up`,
  async apply({ rule, request, response }) {
    if (!response || !isEventStream(request, response)) return { action: { type: 'pass' }, injected: false }
    const transform = new EventTransform({ stop: 'stall', holdSeconds: rule.delay, decide: (_piece, events) => (events >= rule.after ? 'stop' : 'send') })
    return { action: { type: 'stream', transform }, injected: false }
  },
})
