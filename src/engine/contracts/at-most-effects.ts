import { defineContractUnit, withRefusedEffects } from './check.js'

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
    return [withRefusedEffects(report, { name: checkName, passed: actual <= count, detail: `${actual} / ${count} committed effects` })]
  },
})
