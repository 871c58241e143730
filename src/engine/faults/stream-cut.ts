import { defineFault } from './fault.js'
import { afterSchema, type AfterRule } from './stream-params.js'
import { EventTransform } from '../streams/event-transform.js'
import { isEventStream } from '../streams/streamable.js'

/**
 * The stream breaks off: the client gets the first `after` events of the real SSE stream, then the
 * connection closes without the terminal chunk, so the client sees its own "terminated" error
 * and never the final event. The cut happens when the upstream sends anything past the `after`-th
 * event; a stream that ends by itself first is relayed whole and does not count as triggered.
 * A response that is not an event stream is relayed unchanged (not triggered): use `truncate`.
 */
export const streamCutFault = defineFault<'stream_cut', AfterRule>({
  type: 'stream_cut',
  phase: 'on-response',
  needsBody: true,
  params: { after: afterSchema },
  explain: (rule) => `close the event stream after ${rule.after} event(s), without its final event`,
  async apply({ rule, request, response }) {
    if (!response || !isEventStream(request, response)) return { action: { type: 'pass' }, injected: false }
    const transform = new EventTransform({ stop: 'abort', decide: (_piece, events) => (events >= rule.after ? 'stop' : 'send') })
    return { action: { type: 'stream', transform }, injected: false }
  },
})
