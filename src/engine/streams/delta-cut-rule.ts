/**
 * An event rule that stops a model stream inside its deltas of one kind (`at: text |
 * tool_arguments` on `stream_cut` and `stream_stall`): the client gets the first `after` deltas of
 * that kind, and everything before and between them, then the stream stops as the fault says. A
 * stream with no further delta of that kind is relayed whole, and the record says why.
 * The kernel does not read a provider's events: `read` is a plug-in's (`ExchangePlugin.readDelta`);
 * with none, nothing is cut and the record says so.
 */
import type { EventRule } from './event-transform.js'
import { DELTA_NAMES, type DeltaKind, type DeltaReader } from './deltas.js'

export function deltaCutRule(read: DeltaReader | undefined, at: DeltaKind, after: number, stop: 'abort' | 'stall', holdSeconds = 0): EventRule {
  let seen = 0
  if (!read) return { stop, decide: () => 'send', notFired: () => `at: ${at}: no plug-in reads this stream's deltas (the model-calls plug-in does)` }
  return {
    stop,
    holdSeconds,
    decide(piece) {
      if (!piece.complete || !piece.dispatches) return 'send'
      if (read(piece.bytes) !== at) return 'send'
      if (seen >= after) return 'stop'
      seen++
      return 'send'
    },
    notFired: () => (seen === 0 ? `at: ${at}: the stream had no ${DELTA_NAMES[at]}` : `at: ${at}: the stream had ${seen} of the ${after + 1} ${DELTA_NAMES[at]} the cut needs`),
    cutAt: () => ({ at, deltas: seen }),
  }
}
