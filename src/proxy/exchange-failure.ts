/**
 * The last-resort guard at the exchange boundary. An exception thrown while serving one exchange
 * (a user's `observer` hook, a bug) fails that exchange only: its client gets a 500 (or a cut
 * connection once its response started), the error is reported once with its code, and the
 * process keeps serving. A process-wide `uncaughtException` handler would hide bugs of the
 * embedding program too; the guards sit where exchanges run instead: the user's observer
 * (guardObserver), the wire server's socket callbacks, the upstream pool's, and the exchange
 * flow's promise (proxy-server.ts).
 */
import { type ExchangeObserver } from '../engine/exchange-flow.js'
import { errorCode } from '../engine/http.js'
import type { Exchange } from '../engine/exchange.js'
import { MESSAGE_PREFIX, ToolstormError } from '../errors.js'

/** Where the proxy reports a failed exchange (default: stderr). */
export type ExchangeErrorReporter = (error: ToolstormError) => void

/** Failures already reported: one failure can pass several guards on its way out. */
const reported = new WeakSet<ToolstormError>()

/** What was thrown as `ERR_EXCHANGE_FAILED`, naming the exchange (`"GET /x"`), where it was thrown, and the original code. */
export function exchangeFailure(error: unknown, exchange: string, source?: string): ToolstormError {
  if (error instanceof ToolstormError && error.code === 'ERR_EXCHANGE_FAILED') return error
  const reason = error instanceof Error ? error.message : String(error)
  return new ToolstormError('ERR_EXCHANGE_FAILED', `Failed to serve ${exchange}${source ? ` (in ${source})` : ''}: ${reason} (${errorCode(error)}). This exchange failed; the proxy keeps serving.`, { cause: error })
}

/** Report a failure once, however many guards it passes; returns it. */
export function reportFailure(report: ExchangeErrorReporter, error: unknown, exchange: string, source?: string): ToolstormError {
  const failure = exchangeFailure(error, exchange, source)
  if (!reported.has(failure)) {
    reported.add(failure)
    report(failure)
  }
  return failure
}

/** The default reporter: one line and the code on stderr, as the CLI prints errors. */
export function printExchangeFailure(error: ToolstormError): void {
  process.stderr.write(`${MESSAGE_PREFIX} ${error.message}\n  (${error.code})\n`)
}

/**
 * An observer whose hooks report what they throw (once, naming the exchange and the hook) and
 * rethrow it as `ERR_EXCHANGE_FAILED`: the exchange flow then fails that exchange as it fails any
 * other (a reset, or a 500 before anything was sent).
 * @note `wants` is left as it is: it runs for every exchange (the hot path), and what it throws
 * reaches the wire server's guard anyway.
 */
export function guardObserver(observer: ExchangeObserver, report: ExchangeErrorReporter): ExchangeObserver {
  const guarded: ExchangeObserver = observer.wants ? { wants: observer.wants.bind(observer) } : {}
  for (const key of Object.keys(observer) as Array<keyof ExchangeObserver>) {
    const hook = observer[key] as ((exchange: Exchange, a?: unknown, b?: unknown, c?: unknown) => unknown) | undefined
    if (key === 'wants' || typeof hook !== 'function') continue
    ;(guarded as Record<string, unknown>)[key] = (exchange: Exchange, a?: unknown, b?: unknown, c?: unknown) => {
      try {
        return hook.call(observer, exchange, a, b, c)
      } catch (error) {
        throw reportFailure(report, error, `"${exchange.request.method} ${exchange.url.pathname}${exchange.url.search}"`, `the observer's ${key}`)
      }
    }
  }
  return guarded
}
