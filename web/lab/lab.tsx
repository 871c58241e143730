/**
 * The browser lab: pick a scenario and settings, run all three policies with the real engine
 * (in this page, on a virtual clock), compare them, and take the evidence away.
 */
import { useEffect, useRef, useState } from 'preact/hooks'
import { POLICIES, type PolicyId } from '../../dist/demo/agent.js'
import { memoryTransport } from '../../dist/demo/memory-transport.js'
import { runComparison, type DemoComparison, type DemoConfig } from '../../dist/demo/run-demo.js'
import { SCENARIOS, type ScenarioId } from '../../dist/demo/scenarios.js'
import { VERSION } from '../../dist/version.js'
import { downloadText } from '../shared/download.js'
import { ComparisonTable } from './comparison-table.js'
import { findingFor } from './finding.js'
import { RunDetails } from './run-details.js'
import { ScenarioPicker } from './scenario-picker.js'
import { BUDGET_MAX, BUDGET_MIN, DEFAULT_SETTINGS, SEED_MAX, formatSettings, parseSettings, type LabSettings } from './url-config.js'

interface Draft {
  readonly scenario: ScenarioId
  readonly seed: string
  /** Percent, in steps of 5. */
  readonly percent: number
  readonly budget: string
}

type Notice = { readonly tone: 'pass' | 'neutral'; readonly text: string } | null

const INVALID_NUMBERS = 'Enter a whole-number seed from 0 to 999999 and a call limit from 1 to 20.'

function draftOf(config: DemoConfig): Draft {
  return { scenario: config.scenario, seed: String(config.seed), percent: Math.round(config.probability * 100), budget: String(config.maxCalls) }
}

function seedValid(seed: string): boolean {
  return /^\d{1,6}$/.test(seed) && Number(seed) <= SEED_MAX
}

function budgetValid(budget: string): boolean {
  return /^\d{1,2}$/.test(budget) && Number(budget) >= BUDGET_MIN && Number(budget) <= BUDGET_MAX
}

function configOf(draft: Draft): DemoConfig | null {
  if (!seedValid(draft.seed) || !budgetValid(draft.budget)) return null
  return { scenario: draft.scenario, seed: Number(draft.seed), probability: draft.percent / 100, maxCalls: Number(draft.budget) }
}

function sameConfig(a: DemoConfig, b: DemoConfig | null): boolean {
  return b !== null && a.scenario === b.scenario && a.seed === b.seed && a.probability === b.probability && a.maxCalls === b.maxCalls
}

function json(value: unknown): string {
  return JSON.stringify(value, null, 2) + '\n'
}

export function Lab() {
  const initial = parseSettings(location.search)
  const [draft, setDraft] = useState<Draft>(draftOf(initial.config))
  const [policy, setPolicy] = useState<PolicyId>(initial.policy)
  const [result, setResult] = useState<DemoComparison | null>(null)
  const [running, setRunning] = useState(false)
  const [error, setError] = useState<string | null>(null)
  const [notice, setNotice] = useState<Notice>(null)
  const errorPanel = useRef<HTMLDivElement>(null)
  const attempt = useRef(0)
  const busy = useRef(false)

  const run = async (config: DemoConfig | null, announce: boolean) => {
    if (busy.current) {
      setError('A comparison is already running.')
      return
    }
    if (config === null) {
      setError(INVALID_NUMBERS)
      return
    }
    const token = ++attempt.current
    busy.current = true
    setRunning(true)
    setError(null)
    try {
      const comparison = await runComparison(config, memoryTransport)
      if (token !== attempt.current) return
      setResult(comparison)
      if (announce) setNotice({ tone: 'pass', text: 'Comparison complete. All three policies ran in your browser.' })
    } catch (failure) {
      if (token === attempt.current) setError(`The comparison could not finish: ${(failure as Error).message}`)
    } finally {
      if (token === attempt.current) {
        busy.current = false
        setRunning(false)
      }
    }
  }

  // The page opens with the comparison its URL describes: it takes milliseconds.
  useEffect(() => {
    void run(initial.config, false)
    const onPop = () => {
      const settings = parseSettings(location.search)
      setDraft(draftOf(settings.config))
      setPolicy(settings.policy)
      void run(settings.config, false)
    }
    addEventListener('popstate', onPop)
    return () => removeEventListener('popstate', onPop)
  }, [])

  useEffect(() => {
    if (error) errorPanel.current?.focus()
  }, [error])

  const draftConfig = configOf(draft)
  const stale = result !== null && !sameConfig(result.config, draftConfig)
  const selected = result?.runs.find((r) => r.policy === policy) ?? null
  const scenario = SCENARIOS[draft.scenario]
  const shown = result ? SCENARIOS[result.scenario] : null

  const copyLink = async () => {
    if (!result) return
    const settings: LabSettings = { config: result.config, policy }
    // Update the address first, so it is right even when the clipboard is refused.
    history.replaceState(null, '', formatSettings(settings))
    try {
      await navigator.clipboard.writeText(location.href)
      setNotice({ tone: 'neutral', text: 'Settings link copied. Results are not included; the recipient can run the comparison.' })
    } catch {
      setNotice({ tone: 'neutral', text: 'Clipboard unavailable. Copy the settings link from your address bar.' })
    }
  }

  const reset = () => setDraft({ ...draft, seed: String(DEFAULT_SETTINGS.config.seed), budget: String(DEFAULT_SETTINGS.config.maxCalls), percent: 100 })

  return (
    <main class="lab">
      <header class="lab-header">
        <p class="eyebrow mono">toolstorm lab</p>
        <h1>Test recovery from tool failures.</h1>
        <p class="muted">
          An agent reads stock and ships an order through a tool API. toolstorm breaks one call; three recovery policies react. Everything runs in this page with the same engine and rules
          as the <code>toolstorm</code> command: no server, no account, no API key.
        </p>
      </header>

      <div class="lab-grid">
        <form
          class="panel controls"
          aria-label="Experiment settings"
          onSubmit={(event) => {
            event.preventDefault()
            void run(draftConfig, true)
          }}
        >
          <ScenarioPicker value={draft.scenario} disabled={running} onChange={(id) => setDraft({ ...draft, scenario: id })} />
          <div class="incident">
            <p class="mono muted">
              {scenario.code} · {scenario.category} · {scenario.phase}
            </p>
            <h2>{scenario.title}</h2>
            <p>{scenario.lesson}</p>
          </div>
          <label class="field">
            <span>
              Fault probability <output class="mono">{draft.percent}%</output>
            </span>
            <input type="range" min={0} max={100} step={5} value={draft.percent} disabled={running} onInput={(event) => setDraft({ ...draft, percent: Number((event.target as HTMLInputElement).value) })} />
          </label>
          <div class="row">
            <NumericField label="Random seed" name="seed" maxLength={6} value={draft.seed} valid={seedValid(draft.seed)} disabled={running} onInput={(seed) => setDraft({ ...draft, seed })} />
            <NumericField label="Call limit" name="budget" maxLength={2} value={draft.budget} valid={budgetValid(draft.budget)} disabled={running} onInput={(budget) => setDraft({ ...draft, budget })} />
          </div>
          <div class="row">
            <button type="submit" class="primary" disabled={running}>
              {running ? 'Running…' : 'Run comparison'}
            </button>
            <button type="button" onClick={reset} disabled={running}>
              Reset
            </button>
          </div>
          <p class="muted small-print">Computation stays in your browser.</p>
        </form>

        <section class="results" aria-label="Results" aria-busy={running}>
          <div role="status" aria-live="polite" class="live">
            {notice ? (
              <div class={`notice ${notice.tone === 'pass' ? 'pass' : ''}`}>
                <span>{notice.text}</span>
                <button type="button" aria-label="Dismiss notice" onClick={() => setNotice(null)}>
                  ×
                </button>
              </div>
            ) : null}
          </div>
          {error ? (
            <div class="notice fail" role="alert" tabIndex={-1} ref={errorPanel}>
              <span>
                <strong>Comparison not completed.</strong> {error}
              </span>
              <span class="row">
                <button type="button" onClick={() => void run(draftConfig, true)}>
                  Retry comparison
                </button>
                <button type="button" aria-label="Dismiss error" onClick={() => setError(null)}>
                  ×
                </button>
              </span>
            </div>
          ) : null}
          {result && shown ? (
            <>
              {stale ? (
                <p class="notice">Settings changed. Results below are for {shown.short.toLowerCase()}. Run the comparison to update them.</p>
              ) : null}
              <div class="panel">
                <div class="result-head">
                  <div>
                    <h2>{shown.title}</h2>
                    <p class="muted caption">
                      Seed {result.config.seed} · {Math.round(result.config.probability * 100)}% probability · {result.config.maxCalls} call limit · Executed in your browser
                    </p>
                  </div>
                  <div class="row">
                    <button type="button" onClick={() => void copyLink()}>
                      Copy settings link
                    </button>
                    <button type="button" onClick={() => downloadText(`toolstorm-${result.scenario}-seed${result.config.seed}.json`, json(result))}>
                      Export comparison
                    </button>
                    {selected ? (
                      <button type="button" onClick={() => downloadText(`toolstorm-${selected.scenario}-${selected.policy}-seed${selected.seed}.json`, json(selected))}>
                        Export selected run
                      </button>
                    ) : null}
                  </div>
                </div>
                <ComparisonTable runs={result.runs} selected={policy} onSelect={setPolicy} />
              </div>
              {selected ? <FindingPanel run={selected} /> : null}
              {selected ? <RunDetails run={selected} /> : null}
              <details class="panel">
                <summary>What this experiment measures</summary>
                <p>
                  Each policy runs the same task against the same scripted shipping service with the same fault rules and seed. toolstorm records every call, the fault it injected and the
                  shipments the service really committed; the contract then checks that every rule fired, that no shipment was committed twice, that the call budget held, and the
                  scenario's own checks. Export a comparison and run <code>toolstorm inspect</code> or <code>toolstorm check</code> on it.
                </p>
                <p class="mono muted">
                  toolstorm {VERSION} · Report SHA-256 {selected?.digest ?? ''}
                </p>
              </details>
            </>
          ) : null}
        </section>
      </div>
    </main>
  )
}

/** A whole-number text field (a range input cannot take a typed seed). */
function NumericField(props: { label: string; name: string; maxLength: number; value: string; valid: boolean; disabled: boolean; onInput: (value: string) => void }) {
  return (
    <label class="field small">
      <span>{props.label}</span>
      <input
        type="text"
        name={props.name}
        inputMode="numeric"
        maxLength={props.maxLength}
        value={props.value}
        disabled={props.disabled}
        aria-invalid={!props.valid}
        onInput={(event) => props.onInput((event.target as HTMLInputElement).value.trim())}
      />
    </label>
  )
}

function FindingPanel(props: { run: DemoComparison['runs'][number] }) {
  const finding = findingFor(props.run)
  return (
    <section class={`panel finding ${finding.tone}`} aria-label="Finding">
      <p class="muted">{POLICIES[props.run.policy].name}: {POLICIES[props.run.policy].description}</p>
      <h2>{finding.title}</h2>
      <p class="mono">{props.run.stats.effects} / 1 committed / requested</p>
      {finding.details.length ? (
        <ul>
          {finding.details.map((line) => (
            <li key={line}>{line}</li>
          ))}
        </ul>
      ) : null}
    </section>
  )
}
