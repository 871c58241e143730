/**
 * A plug-in that counts, per method and path, the exchanges whose transport was passed through
 * (the proxy's fast path, socket-sink.ts): the extension point a user has, not a mock of ours.
 */
import type { ExchangeTransport } from '../../src/engine/exchange-transport.js'
import type { ExchangePlugin } from '../../src/engine/plugin.js'

export function passThroughCounter(): { plugin: ExchangePlugin; taken: Map<string, number> } {
  const taken = new Map<string, number>()
  const plugin: ExchangePlugin = {
    name: 'pass-through-counter',
    wrapTransport: (exchange, io) =>
      new Proxy(io, {
        get(target, key) {
          const value = Reflect.get(target, key, target) as unknown
          if (key === 'passThrough' && typeof value === 'function') {
            const name = `${exchange.request.method} ${exchange.url.pathname}`
            return (...args: Parameters<NonNullable<ExchangeTransport['passThrough']>>) => {
              taken.set(name, (taken.get(name) ?? 0) + 1)
              return (value as (...a: unknown[]) => void).apply(target, args)
            }
          }
          return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value
        },
      }),
  }
  return { plugin, taken }
}
