/**
 * The live dashboard: one run at a time, fed by one event stream. Exchanges on the left
 * (virtualised), coverage, contracts and the selected exchange on the right; rules editing,
 * reset and exports in the header. "All runs" lists every run with its verdict (runs-view.tsx);
 * a run's name there opens it here.
 */
import { useEffect, useMemo, useState } from 'preact/hooks'
import { AdminRequestError, download, probe, type AdminClient } from './admin-client.js'
import { ContractsPanel } from './contracts-panel.js'
import type { ClaimVerdict, ReportClaim } from '../../src/engine/schema/claim-schema.js'
import { CoveragePanel } from './coverage-panel.js'
import { RecoveryPanel } from './recovery-panel.js'
import { openEventStream, type ConnectionState } from './event-stream.js'
import { ExchangeDetail } from './exchange-detail.js'
import { ExchangeList } from './exchange-list.js'
import { editorDocument } from './editor-document.js'
import { RulesEditor } from './rules-editor.js'
import { MAX_ROWS, RunStore, type RowFilter } from './run-store.js'
import { RunsView } from './runs-view.js'

const STATE_TEXT: Record<ConnectionState, string> = { connecting: 'Connecting…', live: 'Live', reconnecting: 'Reconnecting…', unauthorized: 'Token refused' }

function useStoreVersion(store: RunStore): number {
  const [version, setVersion] = useState(store.version)
  useEffect(() => store.subscribe(() => setVersion(store.version)), [store])
  return version
}

function initialRun(): string {
  return new URLSearchParams(location.hash.slice(1)).get('run') || 'default'
}

function initialView(): 'run' | 'runs' {
  return new URLSearchParams(location.hash.slice(1)).get('view') === 'runs' ? 'runs' : 'run'
}

export function Dashboard(props: { client: AdminClient; onUnauthorized(): void }) {
  const { client } = props
  const store = useMemo(() => new RunStore(), [])
  const version = useStoreVersion(store)
  const [run, setRun] = useState(initialRun)
  const [view, setView] = useState(initialView)
  const [connection, setConnection] = useState<ConnectionState>('connecting')
  const [selected, setSelected] = useState<number | null>(null)
  const [follow, setFollow] = useState(true)
  const [filter, setFilter] = useState<RowFilter>('all')
  const [editing, setEditing] = useState(false)
  const [budget, setBudget] = useState('')
  const [notice, setNotice] = useState<{ tone: 'fail' | 'warn' | 'neutral'; text: string } | null>(null)
  const [cassette, setCassette] = useState(false)

  useEffect(() => {
    const hash = new URLSearchParams()
    if (run !== 'default') hash.set('run', run)
    if (view === 'runs') hash.set('view', 'runs')
    const text = hash.toString()
    history.replaceState(null, '', `${location.pathname}${text ? `#${text}` : ''}`)
  }, [run, view])

  useEffect(() => {
    setSelected(null)
    return openEventStream(client, run, {
      snapshot: (snapshot) => store.applySnapshot(snapshot),
      batch: (batch) => store.applyBatch(batch),
      state: (state) => {
        setConnection(state)
        if (state === 'unauthorized') props.onUnauthorized()
      },
    })
  }, [run])

  // The cassette endpoint exists only where the proxy records one: show the button when it answers.
  useEffect(() => {
    let current = true
    void probe(client, `/cassette?run=${encodeURIComponent(run)}`).then((ok) => current && setCassette(ok))
    return () => {
      current = false
    }
  }, [run, store.exists])

  const rowIds = useMemo(() => (filter === 'all' ? null : store.rowIds(filter)), [version, filter])
  const count = rowIds ? rowIds.length : store.calls.length
  const meta = store.meta
  const budgetFromRules = meta?.maxCalls ?? null
  const budgetValue = budget === '' ? budgetFromRules : /^\d{1,9}$/.test(budget) ? Number(budget) : null
  const result = useMemo(() => store.contract(budgetValue), [version, budgetValue])
  const claimsByCall = useMemo(() => store.claimsByCall(), [version])
  const contradicted = useMemo(() => store.contradictedClaims(), [version])
  // The same element until the store changes: Preact skips an identical element, so renders for other reasons (scrolling, follow) leave it alone.
  const recoveryPanel = useMemo(() => <RecoveryPanel records={store.recovery()} />, [version])
  const selectedCall = selected === null ? undefined : store.calls[selected - 1]
  // The list's counts are as of the last change to the set of runs; the selected run's is live.
  const listed = store.runs.map((r) => (r.id === run ? { id: r.id, calls: store.stats.calls } : r))
  const runs = listed.some((r) => r.id === run) ? listed : [{ id: run, calls: store.stats.calls }, ...listed]

  // `what` may resolve with a notice that says more than `done` (a warning).
  const act = async (what: () => Promise<unknown>, done: string) => {
    try {
      const warning = await what()
      setNotice(typeof warning === 'string' ? { tone: 'warn', text: warning } : { tone: 'neutral', text: done })
    } catch (error) {
      const reason = error instanceof AdminRequestError ? error.message : `${(error as Error).message}. Check that the proxy is running.`
      setNotice({ tone: 'fail', text: reason })
    }
  }

  const resetRun = () => act(() => client.json('POST', `/reset?run=${encodeURIComponent(run)}`).then(() => undefined), `Run "${run}" was reset: ordinals, calls, effects and coverage start again.`)
  const exportReport = () => act(() => download(client, `/report?run=${encodeURIComponent(run)}`, `toolstorm-report-${run}.json`), `Report of run "${run}" downloaded.`)
  const exportCassette = () =>
    act(async () => {
      const response = await download(client, `/cassette?run=${encodeURIComponent(run)}`, `toolstorm-cassette-${run}.jsonl`)
      const cut = Number(response.headers.get('x-toolstorm-cut-bodies') ?? 0)
      // Never silent: a cut body replays as a prefix that breaks off, and fails the replay.
      if (cut > 0) return `Cassette of run "${run}" downloaded. ${cut === 1 ? '1 body in it was' : `${cut} bodies in it were`} cut at the body limit (marked "truncated"): replay breaks them off and fails unless --allow-truncated. Record with a larger --body-limit to keep them whole.`
      return undefined
    }, `Cassette of run "${run}" downloaded.`)

  return (
    <div class="dashboard">
      <header class="topbar">
        <div class="brand">
          <strong>toolstorm</strong> <span class="muted">dashboard</span>
        </div>
        <span class={`badge connection ${connection === 'live' ? 'pass' : connection === 'unauthorized' ? 'fail' : 'warn'}`} role="status">
          {STATE_TEXT[connection]}
        </span>
        <label class="row run-select">
          <span>Run</span>
          <select value={run} onChange={(event) => setRun((event.target as HTMLSelectElement).value)}>
            {runs.map((r) => (
              <option key={r.id} value={r.id}>
                {r.id} ({r.calls})
              </option>
            ))}
          </select>
        </label>
        <div class="row actions">
          <button type="button" aria-pressed={view === 'runs'} onClick={() => setView(view === 'runs' ? 'run' : 'runs')}>
            All runs
          </button>
          <button type="button" aria-expanded={editing} aria-controls="rules-panel" onClick={() => setEditing(!editing)}>
            Edit rules
          </button>
          <button type="button" onClick={() => void resetRun()}>
            Reset run
          </button>
          <button type="button" onClick={() => void exportReport()} disabled={!store.exists}>
            Export report
          </button>
          {cassette ? (
            <button type="button" onClick={() => void exportCassette()}>
              Export cassette
            </button>
          ) : null}
        </div>
      </header>

      {notice ? (
        <div class={`notice ${notice.tone === 'neutral' ? '' : notice.tone}`} role={notice.tone === 'fail' ? 'alert' : 'status'}>
          <span>{notice.text}</span>
          <button type="button" aria-label="Dismiss" onClick={() => setNotice(null)}>
            ×
          </button>
        </div>
      ) : null}

      {editing && meta ? (
        <div id="rules-panel">
          <RulesEditor client={client} document={editorDocument(meta)} redaction={store.redaction} onClose={() => setEditing(false)} />
        </div>
      ) : null}

      {view === 'runs' ? (
        <RunsView
          client={client}
          current={run}
          onOpen={(id) => {
            setRun(id)
            setView('run')
          }}
        />
      ) : null}

      <div class="layout" hidden={view === 'runs'}>
        <section class="panel exchanges" aria-labelledby="exchanges-title">
          <div class="row list-head">
            <h2 id="exchanges-title">Exchanges</h2>
            <span class="muted stats" data-testid="stats">
              {store.stats.calls} calls · {store.faults} faults · {store.effects.length} effects
              {store.stats.budgetRejections ? ` · ${store.stats.budgetRejections} refused` : ''}
              {store.unlisted ? ` · first ${MAX_ROWS.toLocaleString()} listed` : ''}
            </span>
            <label class="row">
              <span>Show</span>
              <select value={filter} onChange={(event) => setFilter((event.target as HTMLSelectElement).value as RowFilter)}>
                <option value="all">All</option>
                <option value="faults">Injected faults</option>
                <option value="errors">Errors and resets</option>
              </select>
            </label>
            <label class="row">
              <input type="checkbox" checked={follow} onChange={(event) => setFollow((event.target as HTMLInputElement).checked)} />
              Follow
            </label>
          </div>
          <div class="exchange-header muted" aria-hidden="true">
            <span class="cell id">#</span>
            <span class="cell run-time">start</span>
            <span class="cell route">route</span>
            <span class="cell ordinal">ord.</span>
            <span class="cell key">key</span>
            <span class="cell fault">fault</span>
            <span class="cell phase">phase</span>
            <span class="cell status">status</span>
            <span class="cell latency">latency</span>
            <span class="cell upstream">up</span>
            <span class="cell effects">eff.</span>
            <span class="cell model">model</span>
          </div>
          {count === 0 ? (
            <p class="muted empty">{store.exists ? 'No exchange matches the filter.' : `No exchange in run "${run}" yet. Send requests through the proxy (header x-toolstorm-run: ${run} picks this run).`}</p>
          ) : null}
          <ExchangeList
            count={count}
            idAt={(index) => (rowIds ? (rowIds[index] as number) : index + 1)}
            call={(id) => store.calls[id - 1]}
            effects={(id) => store.effectsByCall.get(id)}
            verdict={(id) => worstVerdict(claimsByCall.get(id))}
            selected={selected}
            onSelect={setSelected}
            follow={follow}
            onFollowChange={setFollow}
          />
        </section>

        <aside class="side">
          <section class="panel" aria-labelledby="coverage-title">
            <h2 id="coverage-title">Coverage</h2>
            <CoveragePanel rules={meta?.rules ?? []} coverage={store.coverage} />
          </section>
          <section class="panel" aria-labelledby="recovery-title">
            <h2 id="recovery-title">Recovery</h2>
            {recoveryPanel}
          </section>
          <section class="panel" aria-labelledby="contracts-title">
            <h2 id="contracts-title">Contracts</h2>
            <ContractsPanel result={result} contradicted={contradicted} budget={budget} budgetFromRules={budgetFromRules} onBudget={setBudget} />
          </section>
          <section class="panel" aria-labelledby="detail-title">
            <h2 id="detail-title">Exchange</h2>
            <ExchangeDetail call={selectedCall} effects={selected === null ? [] : (store.effectsByCall.get(selected) ?? [])} claims={selected === null ? [] : (claimsByCall.get(selected) ?? [])} />
          </section>
        </aside>
      </div>
    </div>
  )
}

/** The verdict a call's row shows: a contradicted claim over a confirmed one over an unverified one. */
function worstVerdict(claims: readonly ReportClaim[] | undefined): ClaimVerdict | undefined {
  if (!claims?.length) return undefined
  const rank: Record<ClaimVerdict, number> = { silent_commit: 3, phantom_success: 3, confirmed: 2, unverified: 1 }
  return claims.reduce((worst, claim) => (rank[claim.verdict] > rank[worst.verdict] ? claim : worst)).verdict
}
