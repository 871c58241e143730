/** The selected run's evidence in three tabs: call trace, checks, and the CLI commands that reproduce it. */
import { useState } from 'preact/hooks'
import type { DemoRun } from '../../dist/demo/run-demo.js'
import type { CallRecord, EffectRecord } from '../../dist/engine/schema/report.js'
import { CallDialog } from './call-dialog.js'
import { TOOLS, attemptLine, resultLine, seconds } from './call-view.js'

const TABS = ['trace', 'checks', 'cli'] as const
type Tab = (typeof TABS)[number]

function effectsOf(run: DemoRun, call: CallRecord): EffectRecord[] {
  return run.report.effects.filter((effect) => effect.call === call.id)
}

function cliCommands(run: DemoRun): string[] {
  const { scenario, seed, probability, maxCalls } = run.config
  const common = `--scenario ${scenario} --seed ${seed} --probability ${probability} --max-calls ${maxCalls}`
  return [
    `npx toolstorm demo --policy all ${common}`,
    `npx toolstorm demo --policy ${run.policy} ${common} --output incident.json --fail-on-contract`,
    `npx toolstorm check incident.json --max-calls ${maxCalls}`,
  ]
}

export function RunDetails(props: { run: DemoRun }) {
  const { run } = props
  const [tab, setTab] = useState<Tab>('trace')
  const [tool, setTool] = useState<string>('all')
  const [open, setOpen] = useState<CallRecord | null>(null)
  const calls = run.report.calls.filter((call) => tool === 'all' || call.route === tool)
  const labels: Record<Tab, string> = { trace: `Call trace (${run.report.calls.length})`, checks: `Checks (${run.contract.checks.length})`, cli: 'Command line' }

  const onTabKey = (event: KeyboardEvent) => {
    const step = event.key === 'ArrowRight' ? 1 : event.key === 'ArrowLeft' ? -1 : 0
    if (!step) return
    event.preventDefault()
    const next = TABS[(TABS.indexOf(tab) + step + TABS.length) % TABS.length] as Tab
    setTab(next)
    document.getElementById(`tab-${next}`)?.focus()
  }

  return (
    <section class="panel details" aria-label="Run evidence">
      <div role="tablist" aria-label="Evidence" class="tabs" onKeyDown={onTabKey}>
        {TABS.map((id) => (
          <button key={id} type="button" role="tab" id={`tab-${id}`} aria-selected={tab === id} aria-controls={`panel-${id}`} tabIndex={tab === id ? 0 : -1} onClick={() => setTab(id)}>
            {labels[id]}
          </button>
        ))}
      </div>
      {tab === 'trace' ? (
        <div role="tabpanel" id="panel-trace" aria-labelledby="tab-trace">
          <label class="row filter">
            <span>Tool</span>
            <select value={tool} onChange={(event) => setTool((event.target as HTMLSelectElement).value)}>
              <option value="all">All tools</option>
              {TOOLS.map((name) => (
                <option key={name} value={name}>
                  {name}
                </option>
              ))}
            </select>
          </label>
          <ol class="trace">
            {calls.map((call) => {
              const effects = effectsOf(run, call)
              return (
                <li key={call.id}>
                  <button type="button" class="trace-row" onClick={() => setOpen(call)} aria-label={`Call ${call.id}: ${call.route}, attempt ${call.ordinal}. Show details`}>
                    <span class="mono trace-index">{String(call.id).padStart(2, '0')}</span>
                    <span class="mono">+{seconds(call.started)}</span>
                    <span class="trace-main">
                      <strong>{call.route}</strong>
                      <span class="muted">{attemptLine(call)}</span>
                      {effects.map((effect) => (
                        <span key={effect.at} class="badge warn">
                          Shipment committed · {effect.key}
                        </span>
                      ))}
                    </span>
                    <span class={call.status !== null && call.status < 400 ? 'trace-result' : 'trace-result failed'}>{resultLine(call, effects)}</span>
                  </button>
                </li>
              )
            })}
          </ol>
          <p class="muted footnote">
            {run.report.budgetRejections ? `${run.report.budgetRejections} attempt(s) refused by the call budget · ` : ''}
            {run.stats.faults} fault(s) injected · {run.stats.effects} shipment(s) committed
          </p>
        </div>
      ) : null}
      {tab === 'checks' ? (
        <div role="tabpanel" id="panel-checks" aria-labelledby="tab-checks">
          <ul class="checks">
            {run.contract.checks.map((check) => (
              <li key={check.name}>
                <span class={`badge ${check.passed ? 'pass' : 'fail'}`}>{check.passed ? 'Passed' : 'Failed'}</span> <strong>{check.name}</strong>
                <span class="muted"> {check.detail}</span>
              </li>
            ))}
          </ul>
        </div>
      ) : null}
      {tab === 'cli' ? (
        <div role="tabpanel" id="panel-cli" aria-labelledby="tab-cli">
          <p>The same run from a terminal (verdicts are the same; the CLI goes through a real proxy):</p>
          <pre class="cli">{cliCommands(run).join('\n')}</pre>
        </div>
      ) : null}
      <CallDialog call={open} effects={open ? effectsOf(run, open) : []} onClose={() => setOpen(null)} />
    </section>
  )
}
