import { retryableStatus } from '../http.js'
import { defineContractUnit } from './check.js'

/** Tolerance for rounding timings to microseconds. */
const EPSILON_SECONDS = 0.000002

/**
 * No call to a route starts before the `Retry-After` its previous call was given has passed.
 * Counts every call that advertised a delay on a status the SDKs retry (`retryableStatus`: 429, 5xx).
 */
export const retryAfterRespected = defineContractUnit<Record<string, never>>({
  type: 'retryAfterRespected',
  explain: () => 'clients waited for every Retry-After',
  check(report) {
    let violations = 0
    const calls = report.calls
    calls.forEach((call, index) => {
      if (call.retryAfter === null || call.elapsed === null || !retryableStatus(call.status)) return
      const next = calls.slice(index + 1).find((later) => later.route === call.route)
      if (next && next.started < call.started + call.elapsed + call.retryAfter - EPSILON_SECONDS) violations++
    })
    return [{ name: 'Retry-after respected', passed: violations === 0, detail: `${violations} retry(s) occurred before the advertised delay` }]
  },
})
