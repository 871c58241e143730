/**
 * Exchanges cut out of a larger recording (`toolstorm extract`, an incident's window) as a cassette
 * of their own: renumbered so it is valid, as if they were all that happened. Positions (`seq`) run
 * from 1; each run's call ids run from 1 in order, and per-route ordinals too (a key the proxy made
 * from the ordinal, `#N`, follows it); a parent that was not kept becomes null. Refused calls keep
 * their nulls. When nothing was left out, nothing changes.
 */
import type { CassetteExchange } from './cassette-schema.js'

export function cutExchanges(exchanges: readonly CassetteExchange[]): CassetteExchange[] {
  const calls = new Map<string, Map<number, number>>()
  const ordinals = new Map<string, Map<string, number>>()
  return exchanges.map((exchange, index) => {
    const seq = index + 1
    if (exchange.call === null || exchange.ordinal === null) return { ...exchange, seq }
    let ids = calls.get(exchange.run)
    let counts = ordinals.get(exchange.run)
    // A run reset (its calls begin at 1 again) starts over here too.
    if (!ids || !counts || (exchange.call === 1 && ids.size > 0)) {
      calls.set(exchange.run, (ids = new Map()))
      ordinals.set(exchange.run, (counts = new Map()))
    }
    const call = ids.size + 1
    ids.set(exchange.call, call)
    const ordinal = (counts.get(exchange.route) ?? 0) + 1
    counts.set(exchange.route, ordinal)
    const parent = exchange.parent === null ? null : (ids.get(exchange.parent) ?? null)
    const key = exchange.key === `#${exchange.ordinal}` ? `#${ordinal}` : exchange.key
    return { ...exchange, seq, call, ordinal, parent, key }
  })
}
