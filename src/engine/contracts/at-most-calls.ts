import { callsOnRoute, noCallOnRoute } from './calls-on-route.js'
import { defineContractUnit, uncountedCalls, unlistedCalls } from './check.js'

/**
 * At most `count` calls, on one route or overall. The overall count includes calls the budget
 * refused: they have no route, but they were attempts. A route counts as a rule's does (its name,
 * or a glob over names and declared routes' `METHOD /path`); one that matched no call says so, and
 * one whose calls may be past the 10,000 a report lists, or among the exchanges served while the
 * shared state store was unreachable (`stateUnavailable`), cannot pass.
 */
export const atMostCalls = defineContractUnit<{ count: number; route?: string | undefined }>({
  type: 'atMostCalls',
  explain: ({ count, route }) => (route ? `at most ${count} calls to ${route}` : `at most ${count} calls`),
  check(report, { count, route }) {
    const name = route === undefined ? 'Call budget' : `Call budget: ${route}`
    // The overall count includes the calls past the listed 10,000 (droppedCalls); a route's cannot.
    const actual = route === undefined ? report.calls.length + report.droppedCalls + report.budgetRejections : callsOnRoute(report, route).length
    const detail = `${actual} / ${count} calls${route !== undefined && actual === 0 ? `; ${noCallOnRoute(report, route)}` : ''}`
    // Calls the count may have missed, each enough to break the budget: it cannot pass then.
    const missed: Array<readonly [number, string]> = [[report.stateUnavailable ?? 0, uncountedCalls(report)]]
    if (route !== undefined) missed.push([report.droppedCalls, unlistedCalls(report)])
    const unknown = actual <= count ? missed.find(([calls]) => actual + calls > count) : undefined
    if (unknown) return [{ name, passed: false, detail: `${detail}, but ${unknown[1]}, so the ${route === undefined ? '' : "route's "}count is unknown` }]
    return [{ name, passed: actual <= count, detail }]
  },
})
