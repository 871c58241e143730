import { defineContractUnit, unlistedCalls } from '../../engine/contracts/check.js'

/**
 * At most `count` model calls: requests recognised as OpenAI chat completions, Responses or
 * Anthropic messages calls, whatever their outcome (a refused, failed or cut call was still made).
 * Fails closed when the calls past the 10,000 a report lists could take the count over the limit.
 */
/** What a budget on model calls says when the report holds none: an unrecognised provider, or recording off. */
export const NO_MODEL_CALL = 'no call was recorded as a model call (OpenAI chat completions, Responses, Anthropic messages; none when the storm records none, modelCalls: false)'

export const atMostModelCalls = defineContractUnit<{ count: number }>({
  type: 'atMostModelCalls',
  explain: ({ count }) => `at most ${count} model calls`,
  check(report, { count }) {
    const actual = report.calls.filter((call) => call.model).length
    const detail = `${actual} / ${count} model calls${actual === 0 ? `; ${NO_MODEL_CALL}` : ''}`
    if (actual <= count && actual + report.droppedCalls > count) return [{ name: 'Model-call budget', passed: false, detail: `${detail}, but ${unlistedCalls(report)}, so the count of model calls is unknown` }]
    return [{ name: 'Model-call budget', passed: actual <= count, detail }]
  },
})
