/**
 * What the run spent recovering from each triggered fault: calls, model calls, tokens and
 * seconds until the faulted route's next success, or "not recovered" (docs/dashboard.md).
 * Computed in the page with the engine's `recoveryOf`, so it is the report's `recovery`.
 */
import type { RecoveryRecord } from '../../src/engine/schema/report.js'

/**
 * Rows listed: the latest faults (a long run's earlier ones are in the exported report). Few, in
 * a box of their own: the panel re-renders with every batch, and a long table beside the list
 * doubled the page's main-thread time in the 10,000-exchange test.
 */
export const RECOVERY_ROWS = 20

export function RecoveryPanel(props: { records: readonly RecoveryRecord[] }) {
  const { records } = props
  if (!records.length) return <p class="muted">No fault triggered yet.</p>
  const shown = records.slice(-RECOVERY_ROWS)
  return (
    <>
      {records.length > shown.length ? <p class="muted">Latest {RECOVERY_ROWS} of {records.length.toLocaleString('en-US')} faults (all are in the exported report).</p> : null}
      <div class="recovery-box">
      <table class="coverage recovery" aria-label="Recovery per triggered fault">
        <thead>
          <tr>
            <th scope="col">Fault</th>
            <th scope="col" class="num">
              Calls
            </th>
            <th scope="col" class="num">
              Model calls
            </th>
            <th scope="col" class="num">
              Tokens
            </th>
            <th scope="col" class="num">
              Time
            </th>
          </tr>
        </thead>
        <tbody>
          {shown.map((record) => (
            <tr key={record.call} data-recovery={record.call} data-recovered={String(record.recovered)}>
              <th scope="row">
                <span class="rule-name">
                  #{record.call} {record.rule ?? ''}
                </span>
                <span class="muted rule-what">
                  <code>{record.route}</code>
                </span>
                <span class={`badge ${record.recovered ? 'pass' : 'fail'}`}>{record.recovered ? 'recovered' : 'not recovered'}</span>
              </th>
              <td class="num mono" data-count="calls">
                {record.calls}
              </td>
              <td class="num mono" data-count="modelCalls">
                {record.modelCalls}
              </td>
              <td class="num mono" data-count="tokens" title={`${record.inputTokens} in, ${record.outputTokens} out${record.unmeasured ? `, ${record.unmeasured} model calls without usage` : ''}`}>
                {record.inputTokens + record.outputTokens}
              </td>
              <td class="num mono" data-count="seconds">
                {record.seconds === null ? '—' : `${record.seconds} s`}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      </div>
    </>
  )
}
