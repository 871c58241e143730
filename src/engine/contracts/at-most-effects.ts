import { closestName } from '../closest-name.js'
import type { Report } from '../schema/report.js'
import { defineContractUnit, withEffectEvidence } from './check.js'

/**
 * `; no effect is named "shipmnt" (effects seen: shipment ×2); did you mean "shipment"?` when the
 * run's effects all have other names: a misspelled name passes an upper bound vacuously, so it says so.
 */
export function unseenEffectName(report: Pick<Report, 'effects'>, name: string): string {
  if (report.effects.length === 0 || report.effects.some((effect) => effect.name === name)) return ''
  const seen = new Map<string, number>()
  for (const effect of report.effects) seen.set(effect.name, (seen.get(effect.name) ?? 0) + 1)
  const closest = closestName(name, seen.keys())
  return `; no effect is named ${JSON.stringify(name)} (effects seen: ${[...seen].slice(0, 8).map(([seenName, count]) => `${seenName} ×${count}`).join(', ')})${closest ? `; did you mean ${JSON.stringify(closest)}?` : ''}`
}

/**
 * At most `count` effects named `name` (and with `key`, when given).
 * Fails closed when any effect was redacted: redacted labels cannot be filtered reliably.
 */
export const atMostEffects = defineContractUnit<{ name: string; count: number; key?: string | undefined }>({
  type: 'atMostEffects',
  explain: ({ name, count, key }) => `at most ${count} "${name}" effects${key === undefined ? '' : ` with key "${key}"`}`,
  check(report, { name, count, key }) {
    const checkName = `Effect budget: ${name}`
    if (report.effects.some((effect) => effect.redacted)) {
      return [{ name: checkName, passed: false, detail: 'Cannot filter redacted effect identities; use nonsecret identifiers' }]
    }
    const actual = report.effects.filter((effect) => effect.name === name && (key === undefined || effect.key === key)).length
    return [withEffectEvidence(report, { name: checkName, passed: actual <= count, detail: `${actual} / ${count} committed effects${unseenEffectName(report, name)}` })]
  },
})
