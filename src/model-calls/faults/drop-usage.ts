import { defineFault } from '../../engine/faults/fault.js'
import type { BaseRule } from '../../engine/schema/rule-base.js'
import { EventTransform } from '../../engine/streams/event-transform.js'
import { readModelEvent } from '../model-events.js'
import { isEventStream } from '../../engine/streams/streamable.js'

/**
 * The usage goes missing from a model stream: OpenAI chat's usage chunk is dropped (a chunk that
 * also carries choices keeps them, `usage: null`), the Responses API's final response reports
 * `usage: null`, Anthropic's `message_start` and `message_delta` lose their `usage`. Everything
 * else is relayed as it came. The report keeps the tokens the upstream sent: the call record reads
 * the upstream's bytes. Triggered when usage was removed; a stream without usage is relayed whole.
 */
export const dropUsageFault = defineFault<'drop_usage', BaseRule>({
  type: 'drop_usage',
  phase: 'on-response',
  needsBody: true,
  params: {},
  explain: () => 'deliver the model stream without its usage (the report keeps the upstream\'s tokens)',
  async apply({ request, response }) {
    if (!response || !isEventStream(request, response)) return { action: { type: 'pass' }, injected: false }
    const transform = new EventTransform({
      stop: 'abort',
      decide(piece) {
        if (!piece.complete || !piece.dispatches) return 'send'
        const event = readModelEvent(piece.bytes)
        if (!event.usage) return 'send'
        // Replaced, not dropped: the client misses nothing it would call an answer (no `cut`).
        const without = event.withoutUsage()
        return { replace: without === null ? [] : [without] }
      },
      notFired: () => 'the stream reported no usage (an OpenAI chat stream sends it only with stream_options.include_usage)',
    })
    return { action: { type: 'stream', transform }, injected: false }
  },
})
