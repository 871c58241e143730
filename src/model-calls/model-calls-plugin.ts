/**
 * Model calls as a plug-in: the model-call observer (provider, model, tokens in the report) beside
 * whatever else observes. It wants only requests recognised as model calls from their head, so
 * other traffic keeps the fast path.
 *
 * @see docs/streams.md
 */
import { combineObservers } from '../engine/exchange-flow.js'
import type { ExchangePlugin } from '../engine/plugin.js'
import { createModelCallObserver } from './model-call-observer.js'

export function modelCallsPlugin(): ExchangePlugin {
  return { name: 'model-calls', observe: (inner) => combineObservers(createModelCallObserver(), inner) }
}
