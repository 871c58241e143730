/** The demo's human output, line for line the reference's layout. */
import type { Check } from '../engine/contracts/check.js'
import { POLICIES } from './agent.js'
import type { DemoRun } from './run-demo.js'
import { SCENARIOS, type ScenarioId } from './scenarios.js'

export function formatCheck(check: Check, indent = '  '): string {
  return `${indent}${check.passed ? '✓' : '✗'} ${check.name}: ${check.detail}`
}

export function formatDemoHeader(scenario: ScenarioId, seed: number): string {
  return `toolstorm · ${SCENARIOS[scenario].title} · seed ${seed}`
}

export function formatDemoRun(run: DemoRun): string[] {
  const verdict = (run.contract.passed ? 'PASS' : 'FAIL').padEnd(4)
  const name = POLICIES[run.policy].name.padEnd(24)
  const lines = [`${verdict}  ${name} ${run.stats.calls} calls · ${run.stats.effects} shipments · ${run.stats.elapsed.toFixed(2)}s virtual`]
  for (const check of run.contract.checks) lines.push(formatCheck(check))
  return lines
}
