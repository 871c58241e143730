/**
 * How the proxy begins an exchange, whatever keeps its runs: the run ledger's `begin`. In memory
 * the exchange begins synchronously (the hot path pays no await); a shared state store (`--state`)
 * answers later, and when Redis cannot be reached the client gets a 503 naming the store (a test
 * tool must never silently stop injecting), or, with `--state-unavailable=pass`, the request is
 * passed through untouched. Both are counted in the run's report (`stateUnavailable`).
 * @see ../../docs/scale-out.md#when-redis-is-unreachable
 */
import { StateUnavailableError } from '../errors.js'
import { Exchange } from '../engine/exchange.js'
import type { RunLedger } from '../engine/ledger/run-ledger.js'
import type { BeginRequest, Storm } from '../engine/storm.js'
import { failExchange, sendProxyError } from './data-plane-server.js'
import type { ExchangeErrorReporter } from './exchange-failure.js'
import type { WireRequest } from './http1/wire-request.js'
import type { WireResponse } from './http1/wire-response.js'

/** What a replica does with an exchange while Redis is unreachable. */
export type StateUnavailablePolicy = 'fail' | 'pass'

export interface LedgerServeContext {
  readonly storm: Storm
  readonly ledger: RunLedger
  readonly policy: StateUnavailablePolicy
  readonly report: ExchangeErrorReporter
}

/**
 * Begin `request` in the ledger: the exchange, or (from a store that answers later) null when
 * there is nothing to run (the client left meanwhile, or a store failure was answered here).
 */
export function beginInLedger(context: LedgerServeContext, request: BeginRequest, req: WireRequest, res: WireResponse): Exchange | Promise<Exchange | null> {
  const begun = context.ledger.begin(request)
  if (begun instanceof Exchange) return begun
  return begun.then(
    (exchange) => {
      // The client may have left while the store answered.
      if (!res.destroyed) return exchange
      exchange.finish('cancelled', null, 'CLIENT_ABORTED')
      return null
    },
    (error: unknown) => {
      if (!(error instanceof StateUnavailableError)) {
        failExchange(context.report, error, req, res)
        return null
      }
      if (res.destroyed) return null
      if (context.policy === 'pass') return untouched(context.storm, request)
      sendProxyError(res, 503, 'ERR_STATE_UNAVAILABLE', `${error.message} The request was not forwarded (pass it through instead with --state-unavailable=pass).`)
      return null
    },
  )
}

/** An exchange no rule touches and no report lists (the store holds the run's report; it is down). */
function untouched(storm: Storm, request: BeginRequest): Exchange {
  // Planned as every call is: named by the run's own routes, as its report would name it.
  const plan = storm.decider.plan(request)
  return storm.decider.openExchange(storm.run(plan.run), plan, 1, '#0', null, 1, 0, null)
}
