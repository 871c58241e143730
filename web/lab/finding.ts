/** The finding for one policy's run: the reference lab's rules, first match wins. */
import type { DemoRun } from '../../dist/demo/run-demo.js'

export interface Finding {
  readonly tone: 'pass' | 'fail' | 'neutral'
  readonly title: string
  /** Details of the failing checks, when the title alone does not say it. */
  readonly details: readonly string[]
}

export function findingFor(run: DemoRun): Finding {
  const shipments = run.stats.effects
  const completed = run.outcome.completed
  const failing = run.contract.checks.filter((check) => !check.passed).map((check) => `${check.name}: ${check.detail}`)
  if (run.stats.faults === 0) return { tone: 'neutral', title: 'No failure was injected', details: [] }
  if (shipments > 1) return { tone: 'fail', title: `${shipments} shipments for 1 order`, details: failing }
  if (shipments === 1 && !completed) return { tone: 'fail', title: '1 shipment committed. No confirmation received.', details: failing }
  if (run.contract.passed && !completed) return { tone: 'pass', title: 'Stopped without claiming completion', details: [] }
  if (run.contract.passed) return { tone: 'pass', title: '1 shipment. All recovery checks passed.', details: [] }
  return { tone: 'fail', title: completed ? 'Shipment confirmed, with failed checks' : 'No shipment confirmed', details: failing }
}
