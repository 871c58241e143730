import { defineFault } from './fault.js'
import type { BaseRule } from '../schema/rule-base.js'
import { EventTransform } from '../streams/event-transform.js'
import { isEventStream } from '../streams/streamable.js'

/**
 * The final event goes missing: every event of the real SSE stream is delivered except the one
 * that ends it (`data: [DONE]`, Anthropic's `message_stop`, the Responses API's
 * `response.completed`/`incomplete`/`failed`: the plug-ins' `isFinalEvent` says which), and the
 * body then ends cleanly. Triggered only when such an event was dropped; non-SSE responses are
 * relayed unchanged.
 */
export const dropTerminalFault = defineFault<'drop_terminal', BaseRule>({
  type: 'drop_terminal',
  phase: 'on-response',
  needsBody: true,
  params: {},
  explain: () => 'deliver the event stream without its final event ([DONE], message_stop, response.completed)',
  async apply({ request, response, protocol }) {
    if (!response || !isEventStream(request, response)) return { action: { type: 'pass' }, injected: false }
    const transform = new EventTransform({ stop: 'abort', decide: (piece) => (piece.terminal ? 'drop' : 'send') }, protocol.isFinalEvent)
    return { action: { type: 'stream', transform }, injected: false }
  },
})
