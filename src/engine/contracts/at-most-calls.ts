import { defineContractUnit } from './check.js'

/**
 * At most `count` calls, on one route or overall. The overall count includes calls the budget
 * refused: they have no route, but they were attempts.
 */
export const atMostCalls = defineContractUnit<{ count: number; route?: string | undefined }>({
  type: 'atMostCalls',
  explain: ({ count, route }) => (route ? `at most ${count} calls to ${route}` : `at most ${count} calls`),
  check(report, { count, route }) {
    const actual = route === undefined ? report.calls.length + report.droppedCalls + report.budgetRejections : report.calls.filter((call) => call.route === route).length
    return [{ name: route === undefined ? 'Call budget' : `Call budget: ${route}`, passed: actual <= count, detail: `${actual} / ${count} calls` }]
  },
})
