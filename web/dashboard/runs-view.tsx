/**
 * Every run the proxy keeps, one row each with its verdict (`GET /runs/lines`: the lines of
 * `toolstorm inspect --runs`), filtered by verdict, route or text; a run's name opens its view.
 * Refreshed every few seconds while shown in a visible tab.
 */
import { useEffect, useMemo, useState } from 'preact/hooks'
import { AdminRequestError, type AdminClient } from './admin-client.js'
import type { RunLineWithRoutes } from '../../src/report/run-lines.js'

interface RunLines {
  readonly runs: readonly RunLineWithRoutes[]
  readonly total: number
  readonly failed: number
}

const REFRESH_MS = 3000

const counts = (record: Readonly<Record<string, number>>) =>
  Object.entries(record)
    .map(([name, count]) => `${name}×${count}`)
    .join(' ')

/** Whether a line shows for the filters: failed only, a route it called, text in its id, routes or what went wrong. */
export function matchesRunFilter(line: RunLineWithRoutes, filter: { failedOnly: boolean; route: string; text: string }): boolean {
  if (filter.failedOnly && line.verdict !== 'failed') return false
  if (filter.route && !line.routes.includes(filter.route)) return false
  const text = filter.text.trim().toLowerCase()
  if (!text) return true
  return [line.run, ...line.routes, ...line.why, ...line.detail].some((field) => field.toLowerCase().includes(text))
}

export function RunsView(props: { client: AdminClient; current: string; onOpen(run: string): void }) {
  const [lines, setLines] = useState<RunLines | null>(null)
  const [error, setError] = useState<string | null>(null)
  const [failedOnly, setFailedOnly] = useState(false)
  const [route, setRoute] = useState('')
  const [text, setText] = useState('')

  useEffect(() => {
    let current = true
    const load = () =>
      props.client.json<RunLines>('GET', '/runs/lines').then(
        (answer) => {
          if (!current) return
          setLines(answer)
          setError(null)
        },
        (failure: unknown) => current && setError(failure instanceof AdminRequestError ? failure.message : `${(failure as Error).message}. Check that the proxy is running.`),
      )
    void load()
    // Each read builds every run's report on the proxy (1,000 runs of 5 calls: 0.1-0.3 s): not for a hidden tab.
    const timer = setInterval(() => document.visibilityState === 'visible' && void load(), REFRESH_MS)
    return () => {
      current = false
      clearInterval(timer)
    }
  }, [props.client])

  const routes = useMemo(() => [...new Set((lines?.runs ?? []).flatMap((line) => line.routes))].sort(), [lines])
  const shown = useMemo(() => (lines?.runs ?? []).filter((line) => matchesRunFilter(line, { failedOnly, route, text })), [lines, failedOnly, route, text])

  return (
    <section class="panel runs" aria-labelledby="runs-title">
      <div class="row list-head">
        <h2 id="runs-title">Runs</h2>
        <span class="muted stats" data-testid="runs-stats">
          {lines ? `${lines.total} runs · ${lines.failed} failed · ${shown.length} shown` : 'Loading…'}
        </span>
        <label class="row">
          <input type="checkbox" checked={failedOnly} onChange={(event) => setFailedOnly((event.target as HTMLInputElement).checked)} />
          Failed only
        </label>
        <label class="row">
          <span>Route</span>
          <select value={route} onChange={(event) => setRoute((event.target as HTMLSelectElement).value)}>
            <option value="">Any</option>
            {routes.map((name) => (
              <option key={name} value={name}>
                {name}
              </option>
            ))}
          </select>
        </label>
        <label class="row">
          <span>Find</span>
          <input type="search" value={text} placeholder="run, route, reason" onInput={(event) => setText((event.target as HTMLInputElement).value)} />
        </label>
      </div>
      {error ? (
        <p class="notice fail" role="alert">
          {error}
        </p>
      ) : null}
      {lines && shown.length === 0 ? <p class="muted empty">{lines.total === 0 ? 'No run yet. Send requests through the proxy (header x-toolstorm-run: ID names a run).' : 'No run matches the filter.'}</p> : null}
      {shown.length ? (
        <table class="coverage runs-table" aria-label="Runs and their verdicts">
          <thead>
            <tr>
              <th scope="col">Verdict</th>
              <th scope="col">Run</th>
              <th scope="col" class="num">
                Calls
              </th>
              <th scope="col">Statuses</th>
              <th scope="col">Faults</th>
              <th scope="col" class="num">
                Effects
              </th>
              <th scope="col" class="num">
                Dup.
              </th>
              <th scope="col">What went wrong</th>
            </tr>
          </thead>
          <tbody>
            {shown.map((line) => (
              <tr key={line.run} data-run={line.run} data-verdict={line.verdict} aria-current={line.run === props.current ? 'true' : undefined}>
                <td>
                  <span class={`badge ${line.verdict === 'failed' ? 'fail' : 'pass'}`}>{line.verdict === 'failed' ? 'FAIL' : 'ok'}</span>
                </td>
                <th scope="row">
                  <button type="button" class="link" onClick={() => props.onOpen(line.run)}>
                    {line.run}
                  </button>
                </th>
                <td class="num mono" data-field="calls">
                  {line.calls}
                </td>
                <td class="mono" data-field="statuses">
                  {counts(line.statuses) || '—'}
                </td>
                <td class="mono" data-field="faults">
                  {counts(line.faults) || '—'}
                </td>
                <td class="num mono" data-field="effects">
                  {line.effects}
                </td>
                <td class="num mono" data-field="duplicates">
                  {line.duplicates}
                </td>
                <td data-field="why">
                  {line.why.length ? (
                    <>
                      <strong>{line.why.join(', ')}</strong>
                      <span class="muted rule-what">{line.detail[0] ?? ''}</span>
                    </>
                  ) : (
                    '—'
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
    </section>
  )
}
