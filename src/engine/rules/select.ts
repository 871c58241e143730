/**
 * Selection: which rule, if any, applies to one call. Pure apart from the counters it bumps.
 * Rules are scanned in list order; every eligible rule counts the call as eligible; the first
 * eligible rule under its limit that wins its draw is selected (first match wins).
 */
import { decide } from '../decision.js'
import { globMatches } from '../glob.js'
import type { Rule } from '../schema/rule.js'

export interface CoverageCounts {
  eligible: number
  selected: number
  triggered: number
}

/** Whether `rule` applies to call number `ordinal` of `route`, before limits and draws. */
export function isEligible(rule: Pick<Rule, 'route' | 'calls'>, route: string, ordinal: number): boolean {
  return globMatches(rule.route, route) && (rule.calls.length === 0 || rule.calls.includes(ordinal))
}

/**
 * Select the rule for a call and update `coverage` (eligible and selected).
 * `key` is the raw invocation key (`#<ordinal>` by default).
 */
export function selectRule(
  rules: readonly Rule[],
  coverage: Map<string, CoverageCounts>,
  seed: number,
  route: string,
  ordinal: number,
  key: string,
): Rule | null {
  let selected: Rule | null = null
  for (const rule of rules) {
    if (!isEligible(rule, route, ordinal)) continue
    const counts = coverage.get(rule.name) as CoverageCounts
    counts.eligible++
    if (selected !== null) continue
    if (rule.limit !== null && counts.selected >= rule.limit) continue
    if (!decide(seed, rule.name, route, key, rule.probability)) continue
    counts.selected++
    selected = rule
  }
  return selected
}
