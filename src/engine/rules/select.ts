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

/**
 * Whether a rule's glob matches a request: its route name, or its `METHOD /path` when a declared
 * route named it (`path`: null otherwise). Ordinals, draws and reports keep the route name.
 */
export function ruleMatches(rule: Pick<Rule, 'route'>, route: string, path: string | null): boolean {
  return globMatches(rule.route, route) || (path !== null && globMatches(rule.route, path))
}

/**
 * A recorded call's `METHOD /path` when a declared route named it (its route is a key of
 * `routes`), else null: what `ruleMatches` needs to recompute eligibility from a report or a
 * cassette. The URL is the redacted one; a redacted path segment still matches a `*`.
 */
export function callPathName(call: { route: string; method: string; url: string }, routes: Readonly<Record<string, string>>): string | null {
  if (!Object.hasOwn(routes, call.route)) return null
  try {
    return `${call.method.toUpperCase()} ${new URL(call.url, 'http://toolstorm.invalid').pathname}`
  } catch {
    return null
  }
}

/** Whether `rule` applies to call number `ordinal` of `route` (at `path`), before limits and draws. */
export function isEligible(rule: Pick<Rule, 'route' | 'calls'>, route: string, ordinal: number, path: string | null = null): boolean {
  return ruleMatches(rule, route, path) && (rule.calls.length === 0 || rule.calls.includes(ordinal))
}

/**
 * Select the rule for a call and update `coverage` (eligible and selected).
 * `key` is the raw invocation key (`#<ordinal>` by default); `path` the request's `METHOD /path`
 * when a declared route named it.
 */
export function selectRule(
  rules: readonly Rule[],
  coverage: Map<string, CoverageCounts>,
  seed: number,
  route: string,
  ordinal: number,
  key: string,
  path: string | null = null,
): Rule | null {
  let selected: Rule | null = null
  for (const rule of rules) {
    if (!isEligible(rule, route, ordinal, path)) continue
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
