import type { CallRecord } from '../../engine/schema/report.js'
import { defineContractUnit, unlistedCalls } from '../../engine/contracts/check.js'
import { NO_MODEL_CALL } from './at-most-model-calls.js'

export type TokenKind = 'input' | 'output' | 'total'

export const TOKEN_KINDS: readonly TokenKind[] = ['input', 'output', 'total']

/**
 * At most `count` tokens across the model calls, as the providers reported them in their usage
 * fields: input, output, or both (`total`, the default).
 *
 * Calls the upstream never answered with a 2xx cost nothing. **Fails closed** when a model call
 * was answered in full without usage (an OpenAI chat stream without
 * `stream_options.include_usage`), to the client or only to toolstorm (`usageMissing`: a stream
 * a fault cut and toolstorm read on, an answer `response_lost` kept from the client): the budget
 * cannot be checked then. A call whose answer broke off before its usage arrived (the client
 * left, the upstream broke off) is counted as far as known and named in the detail. Calls past
 * the 10,000 a report lists have unknown tokens: it fails closed on them too.
 */
export const atMostTokens = defineContractUnit<{ count: number; kind: TokenKind }>({
  type: 'atMostTokens',
  explain: ({ count, kind }) => (kind === 'total' ? `at most ${count} tokens` : `at most ${count} ${kind} tokens`),
  check(report, { count, kind }) {
    const name = kind === 'total' ? 'Token budget' : `Token budget: ${kind}`
    let actual = 0
    let unmeasured = 0
    let broken = 0
    let models = 0
    for (const call of report.calls) {
      const model = call.model
      if (!model) continue
      models++
      const parts = kind === 'input' ? [model.inputTokens] : kind === 'output' ? [model.outputTokens] : [model.inputTokens, model.outputTokens]
      for (const part of parts) actual += part ?? 0
      if (parts.every((part) => part !== null) || !answered(call)) continue
      if (model.usageMissing || (call.outcome === 'response' && call.status !== null && call.status >= 200 && call.status <= 299)) unmeasured++
      else broken++
    }
    if (unmeasured > 0) return [{ name, passed: false, detail: `Cannot count tokens: ${unmeasured} model call(s) answered without usage` }]
    const detail = `${actual} / ${count} tokens${broken ? `; ${broken} model call(s) broke off before reporting usage` : ''}${models === 0 ? `; ${NO_MODEL_CALL}` : ''}`
    if (actual <= count && report.droppedCalls > 0) return [{ name, passed: false, detail: `${detail}, but ${unlistedCalls(report)}, so their tokens are unknown` }]
    return [{ name, passed: actual <= count, detail }]
  },
})

/** Whether the upstream answered with a 2xx (so tokens were spent). */
function answered(call: CallRecord): boolean {
  return call.executed && call.upstreamStatus !== null && call.upstreamStatus >= 200 && call.upstreamStatus <= 299
}
