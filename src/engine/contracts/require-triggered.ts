import { defineContractUnit } from './check.js'

/**
 * Every named rule (every configured rule when none is named) fired at least once.
 * An unknown name counts as 0, so a misspelled rule or route cannot silently pass.
 */
export const requireTriggered = defineContractUnit<{ names: readonly string[] }>({
  type: 'requireTriggered',
  explain: ({ names }) => (names.length ? `rules ${names.join(', ')} fired` : 'every configured rule fired'),
  check(report, { names }) {
    const targets = names.length ? names : report.rules.map((rule) => rule.name)
    return targets.map((name) => {
      const triggered = report.coverage[name]?.triggered ?? 0
      return { name: `Fault exercised: ${name}`, passed: triggered > 0, detail: `Triggered ${triggered} time(s)` }
    })
  },
})
