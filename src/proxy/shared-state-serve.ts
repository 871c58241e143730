/**
 * Serving with a shared state store (`--state`): the exchange begins once Redis has taken the
 * run's decisions; when Redis cannot be reached the client gets a 503 naming the store (a test
 * tool must never silently stop injecting), or, with `--state-unavailable=pass`, the request is
 * passed through untouched. Both are counted in the run's report (`stateUnavailable`).
 * @see ../../docs/scale-out.md#when-redis-is-unreachable
 */
import { StateUnavailableError } from '../errors.js'
import type { Exchange } from '../engine/exchange.js'
import type { RedisRunState } from '../state/redis-run-state.js'
import type { BeginRequest, Storm } from '../engine/storm.js'
import { HEADER_RUN, headerValue } from '../engine/http.js'
import { failExchange, sendProxyError } from './data-plane-server.js'
import type { ExchangeErrorReporter } from './exchange-failure.js'
import type { WireRequest } from './http1/wire-request.js'
import type { WireResponse } from './http1/wire-response.js'

/** What a replica does with an exchange while Redis is unreachable. */
export type StateUnavailablePolicy = 'fail' | 'pass'

export interface SharedServeContext {
  readonly storm: Storm
  readonly state: RedisRunState
  readonly policy: StateUnavailablePolicy
  readonly report: ExchangeErrorReporter
}

/**
 * Begin `request` in the shared store: the exchange, or null when there is nothing to run (the
 * client left while Redis answered, or a store failure was answered here).
 */
export function beginShared(context: SharedServeContext, given: BeginRequest, req: WireRequest, res: WireResponse): Promise<Exchange | null> {
  // The run the store keys by: the address's, the client's header, else the run this replica made active.
  const request = { ...given, run: given.run ?? headerValue(given.headers, HEADER_RUN) ?? context.storm.activeRun ?? undefined }
  return context.state.begin(request).then(
    (exchange) => {
      // The client may have left while Redis answered.
      if (!res.destroyed) return exchange
      exchange.finish('cancelled', null, 'CLIENT_ABORTED')
      return null
    },
    (error: unknown) => {
      if (!(error instanceof StateUnavailableError)) {
        failExchange(context.report, error, req, res)
        return null
      }
      context.state.countUnavailable(context.state.runOf(request))
      if (res.destroyed) return null
      if (context.policy === 'pass') return untouched(context.storm, context.state.runOf(request), request)
      sendProxyError(res, 503, 'ERR_STATE_UNAVAILABLE', `${error.message} The request was not forwarded (pass it through instead with --state-unavailable=pass).`)
      return null
    },
  )
}

/** An exchange no rule touches and no report lists (Redis holds the run's report; it is down). */
function untouched(storm: Storm, runId: string, request: BeginRequest): Exchange {
  const run = storm.run(runId)
  const view = storm.requestView(request)
  return storm.openExchange(run, { id: storm.newExchangeId(), view, url: request.url, route: storm.routeOf(view.method, request.url, request.mcp), ordinal: 1, key: '#0', rule: null, callId: 1, started: 0, parent: null, seed: storm.seed })
}
