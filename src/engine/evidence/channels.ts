/**
 * Evidence as named diagnostics channels. The names are a stable API: subscribe with
 * `diagnostics_channel.subscribe('toolstorm:exchange:end', …)` instead of patching anything.
 * Every payload carries the run id and the exchange id (`x-toolstorm-call`).
 */
import diagnostics from 'node:diagnostics_channel'
import type { CallRecord, EffectRecord } from '../schema/report.js'

export interface ExchangeEvent {
  readonly run: string
  readonly exchangeId: string
  readonly call: Readonly<CallRecord>
}

export interface EffectEvent {
  readonly run: string
  readonly exchangeId: string
  readonly effect: Readonly<EffectRecord>
}

export interface RunEvent {
  readonly run: string
}

export const channels = {
  /** A call was recorded and its rule (if any) selected. */
  exchangeStart: diagnostics.channel('toolstorm:exchange:start'),
  /** A fault was actually injected. */
  faultApplied: diagnostics.channel('toolstorm:fault:applied'),
  /** The exchange ended for the client. */
  exchangeEnd: diagnostics.channel('toolstorm:exchange:end'),
  /** The tool side reported a commit. */
  commitReported: diagnostics.channel('toolstorm:commit:reported'),
  /** A run was reset or its rules replaced. */
  runReset: diagnostics.channel('toolstorm:run:reset'),
} as const
