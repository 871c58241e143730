import { callPathName, ruleMatches } from '../rules/select.js'
import type { Report } from '../schema/report.js'
import type { Rule } from '../schema/rule.js'
import { defineContractUnit } from './check.js'
import { noCallOnRoute } from './calls-on-route.js'

/**
 * Every named rule (every rule of the run when none is named: those in force, and those earlier
 * calls began under when the rules changed mid-run) fired at least once.
 * An unknown name counts as 0, so a misspelled rule or route cannot silently pass; a rule that
 * was never eligible says why (no call on its route, or none at its ordinals).
 */
export const requireTriggered = defineContractUnit<{ names: readonly string[] }>({
  type: 'requireTriggered',
  explain: ({ names }) => (names.length ? `rules ${names.join(', ')} fired` : 'every configured rule fired'),
  check(report, { names }) {
    const targets = names.length ? names : [...rulesOfRun(report).keys()]
    return targets.map((name) => {
      const counts = report.coverage[name]
      const triggered = counts?.triggered ?? 0
      const detail =
        triggered > 0 ? `Triggered ${triggered} time(s)` : (counts?.eligible ?? 0) > 0 ? `Triggered 0 time(s)${whyNotActed(report, name, counts?.selected ?? 0)}` : `Triggered 0 time(s); ${whyNeverEligible(report, name)}`
      return { name: `Fault exercised: ${name}`, passed: triggered > 0, detail }
    })
  },
})

/** Every rule of the run by name, its latest definition: those earlier calls began under (the rules changed mid-run), then those in force. */
function rulesOfRun(report: Report): Map<string, Rule> {
  const rules = new Map<string, Rule>()
  for (const rule of [...(report.earlierRules ?? []).flatMap((set) => set.rules), ...report.rules]) rules.set(rule.name, rule)
  return rules
}

/** A rule selected but never acting (a stream fault whose events never came) says why, from its first call that recorded it. */
function whyNotActed(report: Report, name: string, selected: number): string {
  if (selected === 0) return ''
  const reason = report.calls.find((call) => call.fault === name && call.notFired)?.notFired
  return reason ? `; selected ${selected} time(s), and it did not act: ${reason}` : ''
}

function whyNeverEligible(report: Report, name: string): string {
  const rules = rulesOfRun(report)
  const rule = rules.get(name)
  if (!rule) return `no rule is named "${name}" (rules: ${[...rules.keys()].join(', ') || 'none'})`
  let matching = 0
  for (const call of report.calls) if (ruleMatches(rule, call.route, callPathName(call, report.routes))) matching++
  if (matching > 0) return `never eligible: ${matching} call(s) on routes matching "${rule.route}", none at the ordinals in its "calls" (${rule.calls.join(', ')})`
  return `never eligible: ${noCallOnRoute(report, rule.route)}`
}
