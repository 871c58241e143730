import { defineContractUnit } from '../../engine/contracts/check.js'

/**
 * At most `count` model calls: requests recognised as OpenAI chat completions, Responses or
 * Anthropic messages calls, whatever their outcome (a refused, failed or cut call was still made).
 */
export const atMostModelCalls = defineContractUnit<{ count: number }>({
  type: 'atMostModelCalls',
  explain: ({ count }) => `at most ${count} model calls`,
  check(report, { count }) {
    const actual = report.calls.filter((call) => call.model).length
    return [{ name: 'Model-call budget', passed: actual <= count, detail: `${actual} / ${count} model calls` }]
  },
})
