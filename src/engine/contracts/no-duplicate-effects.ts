import { defineContractUnit, withEffectEvidence } from './check.js'
import { duplicateEffects } from './duplicate-effects.js'

/** Every committed effect identity occurs once: a retried write did not commit twice. */
export const noDuplicateEffects = defineContractUnit<Record<string, never>>({
  type: 'noDuplicateEffects',
  explain: () => 'no effect was committed twice',
  check(report) {
    let duplicates = 0
    for (const effect of duplicateEffects(report)) duplicates += effect.count - 1
    return [withEffectEvidence(report, { name: 'No duplicate side effects', passed: duplicates === 0, detail: `${duplicates} duplicate effect(s) across ${report.effects.length} commits` })]
  },
})
