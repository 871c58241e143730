import { defineFault } from './fault.js'
import { afterOf, afterOrAtDefaultSchema, atSchema, type AtRule } from './stream-params.js'
import { EventTransform } from '../streams/event-transform.js'
import { deltaCutRule } from '../streams/delta-cut-rule.js'
import { DELTA_NAMES } from '../streams/deltas.js'
import { isEventStream } from '../streams/streamable.js'

/**
 * The stream breaks off: the client gets the first `after` events of the real SSE stream, then the
 * connection closes without the terminal chunk, so the client sees its own "terminated" error
 * and never the final event. The cut happens when the upstream sends anything past the `after`-th
 * event; a stream that ends by itself first is relayed whole and does not count as triggered.
 * With `at: tool_arguments` (or `text`), `after` counts a model stream's deltas of that kind
 * (default 1): the cut falls inside the tool call's arguments, and the client holds half a JSON object.
 * A response that is not an event stream is relayed unchanged (not triggered): use `truncate`.
 */
export const streamCutFault = defineFault<'stream_cut', AtRule>({
  type: 'stream_cut',
  phase: 'on-response',
  needsBody: true,
  params: { after: afterOrAtDefaultSchema, at: atSchema.optional() },
  explain: (rule) =>
    rule.at
      ? `close the model stream after ${afterOf(rule)} of its ${DELTA_NAMES[rule.at]}, without its final event`
      : `close the event stream after ${afterOf(rule)} event(s), without its final event`,
  async apply({ rule, request, response, protocol }) {
    if (!response || !isEventStream(request, response)) return { action: { type: 'pass' }, injected: false }
    const after = afterOf(rule)
    const transform = new EventTransform(rule.at ? deltaCutRule(protocol.readDelta, rule.at, after, 'abort') : { stop: 'abort', decide: (_piece, events) => (events >= after ? 'stop' : 'send') })
    return { action: { type: 'stream', transform }, injected: false }
  },
})
