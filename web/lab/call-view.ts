/** How the lab describes one recorded call of a run. */
import type { CallRecord, EffectRecord } from '../../dist/engine/schema/report.js'
import { ROUTES } from '../../dist/demo/scenarios.js'

/** The tool a route name stands for (route names are the reference's tool names). */
export const TOOLS = Object.keys(ROUTES) as Array<keyof typeof ROUTES>

export function attemptLine(call: CallRecord): string {
  return [`Attempt ${call.ordinal}`, call.executed ? 'executed' : 'not executed', ...(call.injected && call.kind ? [call.kind.replace(/_/g, ' ')] : [])].join(' · ')
}

/** What the agent got back. */
export function resultLine(call: CallRecord, effects: readonly EffectRecord[]): string {
  const committed = effects.length > 0
  if (call.outcome === 'reset') return committed ? 'Connection reset after commit' : 'Connection reset'
  if (call.outcome !== 'response' || call.status === null) return call.error ?? call.outcome
  if (call.status >= 400) return `HTTP ${call.status}${committed ? ' after commit' : ''}`
  return `Returned ${call.status}`
}

export function seconds(value: number | null): string {
  return value === null ? '–' : `${value.toFixed(2)}s`
}

export function milliseconds(value: number | null): string {
  return value === null ? '–' : `${Math.round(value * 1000)} ms`
}
