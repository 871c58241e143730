import { recoveryOf } from '../../engine/recovery.js'
import { defineContractUnit, unlistedCalls } from '../../engine/contracts/check.js'

/**
 * Recovering from any one triggered fault took at most `count` tokens (input + output of the
 * model calls between the fault and the faulted route's next success, `engine/recovery.ts`).
 * Recomputed from the calls, never read from a stored `recovery`. **Fails closed** when a model
 * call in a recovery was answered in full without usage. A fault never recovered from is judged
 * by the tokens spent after it all the same. Fails closed when calls past the 10,000 a report
 * lists were not itemized.
 */
export const maxRecoveryTokens = defineContractUnit<{ count: number }>({
  type: 'maxRecoveryTokens',
  explain: ({ count }) => `at most ${count} tokens to recover from each fault`,
  check(report, { count }) {
    const name = 'Recovery token budget'
    const recoveries = recoveryOf(report.calls)
    const unmeasured = recoveries.filter((recovery) => recovery.unmeasured)
    if (unmeasured.length) return [{ name, passed: false, detail: `Cannot count tokens: ${unmeasured.map((r) => `call ${r.call}`).join(', ')} recovered through model calls answered without usage` }]
    // Past the calls a report lists, faults and what recovering from them cost are unknown.
    const unlisted = report.droppedCalls > 0 ? `, but ${unlistedCalls(report)}, so their faults and recoveries are unknown` : ''
    if (recoveries.length === 0) return [{ name, passed: !unlisted, detail: `No fault triggered: nothing to recover from (limit ${count})${unlisted}` }]
    const worst = recoveries.reduce((a, b) => (b.inputTokens + b.outputTokens > a.inputTokens + a.outputTokens ? b : a))
    const tokens = worst.inputTokens + worst.outputTokens
    const over = recoveries.filter((r) => r.inputTokens + r.outputTokens > count).length
    const how = worst.recovered ? `recovered after ${worst.calls} call(s), ${worst.seconds}s` : `not recovered (${worst.calls} call(s) after it)`
    return [{ name, passed: over === 0 && !unlisted, detail: `${tokens} / ${count} tokens, the most for one fault: call ${worst.call} (${worst.rule ?? 'no rule'} on ${worst.route}), ${how}${over > 1 ? `; ${over} faults over the limit` : ''}${over === 0 ? unlisted : ''}` }]
  },
})
