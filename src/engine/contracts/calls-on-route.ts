/**
 * The calls a route names in a check, matched as a rule's `route` is (docs/rules.md): the route
 * name, or a glob over it, or over a declared route's `METHOD /path`. So `POST /ship` counts the
 * calls of a route declared as `ship: POST /ship`, as a rule on `POST /ship` fires on them.
 */
import { closestName } from '../closest-name.js'
import { callPathName, ruleMatches } from '../rules/select.js'
import type { CallRecord, Report } from '../schema/report.js'

/** Route names listed when a route matched no call, at most. */
const LISTED_ROUTES = 8

export function callsOnRoute(report: Pick<Report, 'calls' | 'routes'>, route: string): CallRecord[] {
  return report.calls.filter((call) => call.route === route || ruleMatches({ route }, call.route, callPathName(call, report.routes)))
}

/** Why `route` matched no call: `no call was on a route matching "X" (routes seen: a ×2, …); the closest route seen is "Y"`. */
export function noCallOnRoute(report: Pick<Report, 'calls'>, route: string): string {
  const seen = new Map<string, number>()
  for (const call of report.calls) seen.set(call.route, (seen.get(call.route) ?? 0) + 1)
  const routes = [...seen].slice(0, LISTED_ROUTES).map(([name, count]) => `${name} ×${count}`)
  if (seen.size > LISTED_ROUTES) routes.push(`… (${seen.size} routes in all)`)
  // A misspelled route is the usual cause: name the route seen that is a typo away from it.
  const closest = closestName(route, seen.keys())
  return `no call was on a route matching "${route}" (${routes.length ? `routes seen: ${routes.join(', ')}` : 'no calls'})${closest ? `; the closest route seen is "${closest}"` : ''}`
}
