/**
 * Model calls as a plug-in: the model-call observer (provider, model, tokens in the report) beside
 * whatever else observes, and status faults answered as the provider answers them (its error
 * body and rate-limit headers, provider-errors.ts). The observer wants only requests recognised
 * as model calls from their head, so other traffic keeps the fast path. It brings the provider
 * faults (`overloaded`, `token_limit`, `duplicate_event`, `drop_usage`) and reads a stream's deltas
 * for `at: text | tool_arguments` and which event ends it (`[DONE]`, `message_stop`: terminal-event.ts).
 *
 * @see docs/streams.md
 */
import { combineObservers } from '../combine-observers.js'
import type { ExchangePlugin } from '../engine/plugin.js'
import { createModelCallObserver } from './model-call-observer.js'
import { modelEndpointOf, providerError } from './provider-errors.js'
import { readModelEvent } from './model-events.js'
import { isTerminalEvent } from './terminal-event.js'
import { MODEL_CALL_FAULTS } from './faults/model-call-faults.js'

export interface ModelCallsPluginOptions {
  /** Record model calls (provider, model, tokens) in the report. Default true; the error shapes apply either way. */
  readonly record?: boolean
}

export function modelCallsPlugin(options: ModelCallsPluginOptions = {}): ExchangePlugin {
  return {
    name: 'model-calls',
    // Recording, a cut model stream is read on for the usage its provider sends last (docs/streams.md).
    ...(options.record === false ? {} : { observe: (inner) => combineObservers(createModelCallObserver(), inner), readsOnAfterCut: (request) => modelEndpointOf(request) !== null }),
    shapeFailure: providerError,
    readDelta: (event) => readModelEvent(event).delta,
    isFinalEvent: isTerminalEvent,
    faults: MODEL_CALL_FAULTS,
  }
}
