/**
 * `update` mode's result: this session's traffic in order, replayed exchanges copied from the
 * cassette and new ones taken from the recording, with positions, call ids, ordinals and default
 * keys renumbered so the cassette stays consistent. Exchanges the session never requested are
 * dropped: the new cassette is what happened this time.
 */
import type { CassetteExchange } from '../format/cassette-schema.js'
import type { Rule } from '../../engine/schema/rule.js'
import { Cassette } from '../format/cassette.js'

/** A replayed position, or a live exchange (its run and call number in the recording). */
export type SessionStep = { readonly type: 'replayed'; readonly position: number } | { readonly type: 'recorded'; readonly run: string; readonly call: number | null }

export function mergeSession(original: Cassette, recorded: Cassette, steps: readonly SessionStep[]): Cassette {
  const calls = new Map<string, number>()
  const ordinals = new Map<string, number>()
  // The recording saw every exchange (replayed ones too): live ones are found by run and call.
  const live = new Map<string, CassetteExchange>()
  for (const exchange of recorded.exchanges) live.set(`${exchange.run}\u0000${exchange.call}`, exchange)
  const exchanges: CassetteExchange[] = []
  for (const step of steps) {
    const source = step.type === 'replayed' ? original.exchanges[step.position] : live.get(`${step.run}\u0000${step.call}`)
    if (!source) continue
    let exchange: CassetteExchange = { ...source, seq: exchanges.length + 1, parent: null }
    if (source.call !== null) {
      const call = (calls.get(source.run) ?? 0) + 1
      calls.set(source.run, call)
      const routeKey = `${source.run}\u0000${source.route}`
      const ordinal = (ordinals.get(routeKey) ?? 0) + 1
      ordinals.set(routeKey, ordinal)
      exchange = { ...exchange, call, ordinal, key: source.key !== null && /^#\d+$/.test(source.key) ? `#${ordinal}` : source.key }
    }
    exchanges.push(exchange)
  }
  const rules = new Map<string, Rule>(original.header.rules.map((rule) => [rule.name, rule]))
  for (const rule of recorded.header.rules) if (!rules.has(rule.name)) rules.set(rule.name, rule)
  const { version: _v, kind: _k, exchanges: _n, ...header } = original.header
  return Cassette.from({ ...header, recorded: new Date().toISOString(), source: 'replay-update', rules: [...rules.values()] }, exchanges, original.source)
}
