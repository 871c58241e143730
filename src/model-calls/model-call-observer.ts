/**
 * The exchange observer that records model calls: for each request recognised as one (from its
 * head, so other traffic keeps the fast path), `call.model` in the report holds the provider, API,
 * model, input/output tokens and whether it streamed, kept current while the bytes pass. Latency
 * is the call's own `elapsed`. On by default for every storm, whichever transport serves it.
 *
 * @example
 * const storm = createStorm(config)                         // model calls recorded
 * const quiet = createStorm(config, { modelCalls: false })  // not recorded
 */
import type { Exchange } from '../engine/exchange.js'
import type { ExchangeObserver } from '../engine/exchange-flow.js'
import { ModelCallReader } from './model-call-reader.js'
import { recognizeModelCall, type ModelEndpoint } from './recognize-model-call.js'

export function createModelCallObserver(): ExchangeObserver {
  const endpoints = new WeakMap<Exchange, ModelEndpoint>()
  const readers = new WeakMap<Exchange, ModelCallReader>()
  return {
    wants(exchange) {
      if (exchange.record === null) return false
      const endpoint = recognizeModelCall(exchange.request.method, exchange.url, exchange.request.headers)
      if (endpoint) endpoints.set(exchange, endpoint)
      return endpoint !== null
    },
    onStart(exchange) {
      const endpoint = endpoints.get(exchange)
      if (!endpoint || !exchange.record) return
      const reader = new ModelCallReader(endpoint)
      readers.set(exchange, reader)
      exchange.record.model = reader.call
    },
    // Also when a fault answers before the provider: the model and stream flag come from the request.
    onRequestBodyRead(exchange, chunk) {
      readers.get(exchange)?.request(chunk)
    },
    onUpstreamHead(exchange, status, headers) {
      readers.get(exchange)?.responseHead(status, headers)
    },
    onUpstreamBody(exchange, chunk) {
      // In-process, the body may still flow after the exchange finished: readers live as long as their exchange.
      readers.get(exchange)?.responseBody(chunk)
    },
  }
}
