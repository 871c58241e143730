/**
 * One triggered fault's recovery cost as the lab's comparison shows it: the numbers of
 * `report.recovery`, computed by the engine's `recoveryOf`.
 */
import type { RecoveryRecord } from '../../dist/engine/schema/report.js'

const plural = (count: number, one: string, many = `${one}s`) => `${count.toLocaleString('en-US')} ${count === 1 ? one : many}`

/** Model calls and tokens, or nothing when the recovery made no model call. */
export function modelCost(record: RecoveryRecord): string {
  if (record.modelCalls === 0) return ''
  const tokens = record.inputTokens + record.outputTokens
  return `${plural(record.modelCalls, 'model call')}, ${plural(tokens, 'token')} (${record.inputTokens.toLocaleString('en-US')} in, ${record.outputTokens.toLocaleString('en-US')} out)${record.unmeasured ? `, ${record.unmeasured} without usage` : ''}`
}

/** "recovered after 2 calls in 0.35 s", or "not recovered (3 calls to the run's end)". */
export function recoveryText(record: RecoveryRecord): string {
  const model = modelCost(record)
  const spent = `${plural(record.calls, 'call')}${model ? `; ${model}` : ''}`
  return record.recovered ? `recovered after ${spent} in ${record.seconds} s` : `not recovered (${spent} to the run's end)`
}
