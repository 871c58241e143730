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
    if (route === undefined) {
      const actual = report.calls.length + report.droppedCalls + report.budgetRejections
      const detail = `${actual} / ${count} calls`
      if (actual <= count && actual + (report.stateUnavailable ?? 0) > count) return [{ name: 'Call budget', passed: false, detail: `${detail}, but ${uncountedCalls(report)}, so the count is unknown` }]
      return [{ name: 'Call budget', passed: actual <= count, detail }]
    }
    const actual = callsOnRoute(report, route).length
    const detail = `${actual} / ${count} calls${actual === 0 ? `; ${noCallOnRoute(report, route)}` : ''}`
    if (actual <= count && actual + (report.stateUnavailable ?? 0) > count) {
      return [{ name: `Call budget: ${route}`, passed: false, detail: `${detail}, but ${uncountedCalls(report)}, so the route's count is unknown` }]
    }
    if (actual <= count && actual + report.droppedCalls > count) {
      return [{ name: `Call budget: ${route}`, passed: false, detail: `${detail}, but ${unlistedCalls(report)}, so the route's count is unknown` }]
    }
    return [{ name: `Call budget: ${route}`, passed: actual <= count, detail }]
  },
})
