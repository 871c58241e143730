/** Coverage per rule: how many calls were eligible, selected and triggered. */
import type { CoverageCounts } from '../../src/engine/schema/report.js'
import type { Rule } from '../../src/engine/schema/rule.js'

function state(counts: CoverageCounts): { tone: string; text: string } {
  if (counts.triggered > 0) return { tone: 'pass', text: 'fired' }
  if (counts.eligible === 0) return { tone: 'warn', text: 'no matching call' }
  if (counts.selected === 0) return { tone: '', text: 'not selected' }
  return { tone: 'warn', text: 'selected, not injected' }
}

export function CoveragePanel(props: { rules: readonly Rule[]; coverage: Readonly<Record<string, CoverageCounts>> }) {
  if (!props.rules.length) return <p class="muted">No rules: every exchange passes through. Add rules in the editor.</p>
  return (
    <table class="coverage" aria-label="Coverage per rule">
      <thead>
        <tr>
          <th scope="col">Rule</th>
          <th scope="col" class="num">
            Eligible
          </th>
          <th scope="col" class="num">
            Selected
          </th>
          <th scope="col" class="num">
            Triggered
          </th>
        </tr>
      </thead>
      <tbody>
        {props.rules.map((rule) => {
          const counts = props.coverage[rule.name] ?? { eligible: 0, selected: 0, triggered: 0 }
          const { tone, text } = state(counts)
          return (
            <tr key={rule.name} data-rule={rule.name}>
              <th scope="row">
                <span class="rule-name">{rule.name}</span>
                <span class="muted rule-what">
                  {rule.kind} on <code>{rule.route}</code>
                </span>
                <span class={`badge ${tone}`}>{text}</span>
              </th>
              <td class="num mono" data-count="eligible">
                {counts.eligible}
              </td>
              <td class="num mono" data-count="selected">
                {counts.selected}
              </td>
              <td class="num mono" data-count="triggered">
                {counts.triggered}
              </td>
            </tr>
          )
        })}
      </tbody>
    </table>
  )
}
