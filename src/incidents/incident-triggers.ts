/**
 * Why a run is worth keeping (src/report/what-went-wrong.ts says what went wrong): seen on each
 * exchange as it is recorded, on the run's report when it ends, or said from outside (a contract
 * that failed on it, `POST /incidents`). OpenTelemetry's tail sampling keeps a trace on its status
 * once it ended; here the unit is the run, and the policies are these.
 */
import type { CassetteExchange } from '../cassette/format/cassette-schema.js'
import { callWentWrong, type WhatWentWrong } from '../report/what-went-wrong.js'

export { reportWentWrong as reportTriggers, WRONG_REASONS as INCIDENT_REASONS } from '../report/what-went-wrong.js'
export type IncidentTrigger = WhatWentWrong

/** What one finished exchange shows went wrong, from the fields its call record would have. */
export function exchangeTriggers(exchange: CassetteExchange): IncidentTrigger[] {
  const upstreamStatus = exchange.upstream?.status ?? (exchange.executed && exchange.response ? exchange.response.status : null)
  return callWentWrong({ id: exchange.call, route: exchange.route, outcome: exchange.outcome, executed: exchange.executed, error: exchange.error, upstreamStatus, fault: exchange.fault?.rule ?? null, kind: exchange.fault?.kind ?? null, injected: exchange.fault?.injected ?? false })
}
