/**
 * Several exchange observers as one (engine/exchange-flow.ts `ExchangeObserver`), for plug-ins and
 * transports: a recorder beside the user's observer, a plug-in's observer around the others. Each
 * sees only the exchanges it `wants`; the kernel itself asks one observer.
 *
 * @example
 * const observer = combineObservers(recorder.observer, options.observer)
 */
import type { Exchange } from './engine/exchange.js'
import type { ExchangeObserver } from './engine/exchange-flow.js'

export function combineObservers(...observers: Array<ExchangeObserver | undefined>): ExchangeObserver | undefined {
  const list = observers.filter((o): o is ExchangeObserver => o !== undefined)
  if (list.length <= 1) return list[0]
  const interested = new WeakMap<Exchange, ExchangeObserver[]>()
  const wanting = (exchange: Exchange) => {
    let wanted = interested.get(exchange)
    if (!wanted) interested.set(exchange, (wanted = list.filter((observer) => observer.wants?.(exchange) !== false)))
    return wanted
  }
  const each =
    <K extends Exclude<keyof ExchangeObserver, 'wants' | 'attached'>>(key: K) =>
    (exchange: Exchange, ...args: unknown[]) => {
      for (const observer of wanting(exchange)) (observer[key] as ((...a: unknown[]) => void) | undefined)?.(exchange, ...args)
    }
  return {
    attached: (front) => {
      for (const observer of list) observer.attached?.(front)
    },
    wants: (exchange) => wanting(exchange).length > 0,
    onStart: each('onStart'),
    onRequestBody: each('onRequestBody'),
    onRequestBodyRead: each('onRequestBodyRead'),
    onUpstreamHead: each('onUpstreamHead'),
    onUpstreamBody: each('onUpstreamBody'),
    onClientHead: each('onClientHead'),
    onClientBody: each('onClientBody'),
    onFinished: each('onFinished'),
  }
}
