/** One row per policy: verdict, confirmation, shipments, calls, simulated time, recovery and checks. */
import { POLICIES, type PolicyId } from '../../dist/demo/agent.js'
import type { DemoRun } from '../../dist/demo/run-demo.js'
import { recoveryText } from './recovery-text.js'

export function ComparisonTable(props: { runs: readonly DemoRun[]; selected: PolicyId; onSelect(policy: PolicyId): void }) {
  return (
    <table class="comparison" aria-label="Policy comparison">
      <thead>
        <tr>
          <th scope="col">Policy</th>
          <th scope="col">Verdict</th>
          <th scope="col">Confirmation</th>
          <th scope="col">Shipments</th>
          <th scope="col">Recorded calls</th>
          <th scope="col">Simulated time</th>
          <th scope="col">Recovery</th>
          <th scope="col">Checks</th>
        </tr>
      </thead>
      <tbody>
        {props.runs.map((run) => {
          const fired = run.stats.faults > 0
          const refused = run.report.budgetRejections
          return (
            <tr key={run.policy} data-policy={run.policy} class={run.policy === props.selected ? 'selected' : undefined}>
              <th scope="row" data-label="Policy">
                <button type="button" class="policy-button" aria-pressed={run.policy === props.selected} onClick={() => props.onSelect(run.policy)}>
                  {POLICIES[run.policy].name}
                </button>
              </th>
              <td data-label="Verdict" data-cell="verdict">
                <span class={`badge ${run.contract.passed ? 'pass' : 'fail'}`}>{run.contract.passed ? 'PASS' : 'FAIL'}</span>
              </td>
              <td data-label="Confirmation">{run.outcome.completed ? 'Received' : 'Not received'}</td>
              <td data-label="Shipments" data-cell="shipments" data-value={run.stats.effects}>
                <span class={run.stats.effects > 1 ? 'badge fail' : undefined}>{run.stats.effects} / 1 requested</span>
              </td>
              <td data-label="Recorded calls" data-cell="calls" data-value={run.stats.calls}>
                {run.stats.calls}
                {refused > 0 ? <span class="muted"> +{refused} refused</span> : null}
              </td>
              <td data-label="Simulated time" data-cell="elapsed" data-value={run.stats.elapsed}>
                {Math.round(run.stats.elapsed * 1000)} ms
              </td>
              <td data-label="Recovery" data-cell="recovery">
                {run.report.recovery?.length ? (
                  <ul class="recovery">
                    {run.report.recovery.map((record) => (
                      <li key={record.call} data-recovery={record.call} data-recovered={String(record.recovered)}>
                        <span class={record.recovered ? undefined : 'badge fail'}>
                          #{record.call} {record.rule}
                        </span>{' '}
                        {recoveryText(record)}
                      </li>
                    ))}
                  </ul>
                ) : (
                  <span class="muted">No fault</span>
                )}
              </td>
              <td data-label="Checks">
                <span class={`badge ${!fired ? '' : run.contract.passed ? 'pass' : 'fail'}`}>{run.contract.passed ? 'Passed' : 'Failed'}</span>
              </td>
            </tr>
          )
        })}
      </tbody>
    </table>
  )
}
