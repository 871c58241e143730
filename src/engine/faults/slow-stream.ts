import { defineFault } from './fault.js'
import type { BaseRule } from '../schema/rule-base.js'
import { EventTransform } from '../streams/event-transform.js'
import { isEventStream } from '../streams/streamable.js'

/**
 * A slow stream: every event after the first is held `delay` seconds longer before it is sent
 * (waits add up; the upstream is slowed down too, by backpressure). Triggered when at least one
 * event was delayed (`delay` > 0 and two events or more). Non-SSE responses are relayed unchanged.
 */
export const slowStreamFault = defineFault<'slow_stream', BaseRule>({
  type: 'slow_stream',
  phase: 'on-response',
  needsBody: true,
  params: {},
  explain: (rule) => `delay every event of the stream after the first by ${rule.delay}s`,
  async apply({ rule, request, response }) {
    if (!response || !isEventStream(request, response)) return { action: { type: 'pass' }, injected: false }
    const transform = new EventTransform({ stop: 'abort', decide: (piece, events) => (events > 0 && piece.complete && piece.dispatches ? { delay: rule.delay } : 'send') })
    return { action: { type: 'stream', transform }, injected: false }
  },
})
