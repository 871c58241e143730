/**
 * What recovering from each triggered fault cost, a pure function of the calls (so it is the
 * same on a live run, a saved report and a cassette): from the faulted call to the faulted
 * route's next success (a 2xx answered in full, not faulted), the calls the run made after the
 * fault, how many were model calls, the tokens they used, and the seconds from the end of the
 * faulted call to the end of that success. No success: `recovered: false`, counted to the end.
 * The faulted call's own tokens are not part of it (they were spent before the fault showed).
 * Concurrent agents in one run share its calls: use a run per agent (`x-toolstorm-run`) to
 * measure each.
 */
import type { CallRecord, RecoveryRecord } from './schema/report.js'
import { roundSeconds } from './clock.js'

export function recoveryOf(calls: readonly CallRecord[]): RecoveryRecord[] {
  const records: RecoveryRecord[] = []
  for (const [index, faulted] of calls.entries()) {
    if (!faulted.injected) continue
    let count = 0
    let modelCalls = 0
    let inputTokens = 0
    let outputTokens = 0
    let unmeasured = 0
    let success: CallRecord | null = null
    // By index, not a slice: the dashboard recomputes this on every render of a long run.
    for (let next = index + 1; next < calls.length; next++) {
      const call = calls[next] as CallRecord
      count++
      if (call.model) {
        modelCalls++
        inputTokens += call.model.inputTokens ?? 0
        outputTokens += call.model.outputTokens ?? 0
        if ((call.model.inputTokens === null || call.model.outputTokens === null) && (succeeded(call) || call.model.usageMissing)) unmeasured++
      }
      if (call.route === faulted.route && succeeded(call)) {
        success = call
        break
      }
    }
    const end = (call: CallRecord) => call.started + (call.elapsed ?? 0)
    records.push({
      call: faulted.id,
      rule: faulted.fault,
      route: faulted.route,
      recovered: success !== null,
      calls: count,
      modelCalls,
      inputTokens,
      outputTokens,
      ...(unmeasured ? { unmeasured } : {}),
      seconds: success ? roundSeconds(Math.max(0, end(success) - end(faulted))) : null,
    })
  }
  return records
}

/** A 2xx the client received in full, with no fault acting on it. */
function succeeded(call: CallRecord): boolean {
  return !call.injected && call.outcome === 'response' && call.status !== null && call.status >= 200 && call.status <= 299
}
