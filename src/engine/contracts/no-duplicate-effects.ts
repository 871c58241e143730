import { defineContractUnit } from './check.js'

/** Every committed effect identity occurs once: a retried write did not commit twice. */
export const noDuplicateEffects = defineContractUnit<Record<string, never>>({
  type: 'noDuplicateEffects',
  explain: () => 'no effect was committed twice',
  check(report) {
    const counts = new Map<number, number>()
    for (const effect of report.effects) counts.set(effect.identity, (counts.get(effect.identity) ?? 0) + 1)
    let duplicates = 0
    for (const count of counts.values()) duplicates += count - 1
    return [
      {
        name: 'No duplicate side effects',
        passed: duplicates === 0,
        detail: `${duplicates} duplicate effect(s) across ${report.effects.length} commits`,
      },
    ]
  },
})
