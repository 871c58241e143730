import { defineFault } from '../../engine/faults/fault.js'
import { afterSchema, atSchema, type AfterRule } from '../../engine/faults/stream-params.js'
import { EventTransform } from '../../engine/streams/event-transform.js'
import { DELTA_NAMES, type DeltaKind } from '../../engine/streams/deltas.js'
import { readModelEvent } from '../model-events.js'
import { isEventStream } from '../../engine/streams/streamable.js'

export interface DuplicateEventRule extends AfterRule {
  readonly at: DeltaKind
}

/**
 * One delta arrives twice, as from a gateway that replays an event: after `after` deltas of kind
 * `at` (`text`, the default, or `tool_arguments`), the next one is sent twice in a row, so a client
 * that appends deltas holds a doubled word or a broken JSON object. Everything else is relayed as
 * it came. Triggered when a delta was doubled; a stream without one is relayed whole.
 */
export const duplicateEventFault = defineFault<'duplicate_event', DuplicateEventRule>({
  type: 'duplicate_event',
  phase: 'on-response',
  needsBody: true,
  params: { after: afterSchema, at: atSchema.default('text') },
  explain: (rule) => `send the model stream's ${rule.after === 0 ? 'first' : `${ordinal(rule.after + 1)}`} ${DELTA_NAMES[rule.at].replace(/s$/, '')} twice`,
  async apply({ rule, request, response }) {
    if (!response || !isEventStream(request, response)) return { action: { type: 'pass' }, injected: false }
    let seen = 0
    let done = false
    const transform = new EventTransform({
      stop: 'abort',
      decide(piece) {
        if (done || !piece.complete || !piece.dispatches || readModelEvent(piece.bytes).delta !== rule.at) return 'send'
        if (seen++ < rule.after) return 'send'
        done = true
        return { replace: [piece.bytes, piece.bytes] }
      },
      notFired: () => `at: ${rule.at}: the stream had ${seen === 0 ? 'no' : `${seen} of the ${rule.after + 1}`} ${DELTA_NAMES[rule.at]}${seen === 0 ? '' : ' the fault needs'}`,
    })
    return { action: { type: 'stream', transform }, injected: false }
  },
})

function ordinal(n: number): string {
  const suffix = n % 100 >= 11 && n % 100 <= 13 ? 'th' : (['th', 'st', 'nd', 'rd'][n % 10] ?? 'th')
  return `${n}${suffix}`
}
