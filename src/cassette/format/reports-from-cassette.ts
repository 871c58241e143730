/**
 * A cassette as reports: one per run, with the calls, effects and coverage recomputed from the
 * exchanges and the recorded rules, then validated like any saved report. `inspect` and `check`
 * read cassettes through this.
 */
import { callPathName, isEligible } from '../../engine/rules/select.js'
import { ITEMIZED_CALLS_LIMIT } from '../../engine/schema/config.js'
import type { CassetteExchange, CassetteHeader } from './cassette-schema.js'
import { REPORT_KIND, type CallRecord, type CoverageCounts, type EffectRecord, type Report } from '../../engine/schema/report.js'
import { validateReport } from '../../report/validate-report.js'

interface Segment {
  run: string
  calls: CallRecord[]
  dropped: number
  coverage: Map<string, CoverageCounts>
  effects: Array<EffectRecord & { order: number }>
  refused: number
}

/** The report fields of one exchange's call. */
export function callRecordOf(exchange: CassetteExchange): CallRecord {
  const response = exchange.response
  return {
    id: exchange.call as number,
    route: exchange.route,
    ordinal: exchange.ordinal as number,
    key: exchange.key as string,
    parent: exchange.parent,
    method: exchange.request.method,
    url: exchange.request.url,
    started: exchange.started,
    elapsed: exchange.elapsed,
    outcome: exchange.outcome,
    status: exchange.outcome === 'response' && response ? response.status : null,
    executed: exchange.executed,
    upstreamStatus: exchange.upstream?.status ?? (exchange.executed && response ? response.status : null),
    fault: exchange.fault?.rule ?? null,
    kind: exchange.fault?.kind ?? null,
    phase: exchange.fault?.phase ?? null,
    injected: exchange.fault?.injected ?? false,
    retryAfter: exchange.retryAfter,
    error: exchange.error,
    ...(exchange.model ? { model: exchange.model } : {}),
    ...(exchange.mcp ? { mcp: exchange.mcp } : {}),
    ...(exchange.cut ? { cut: exchange.cut } : {}),
    ...(exchange.trace ? { trace: exchange.trace } : {}),
  }
}

/** One report per run (a run reset mid-recording starts a new report, named `run~2`). */
export function reportsFromCassette(cassette: { readonly header: CassetteHeader; readonly exchanges: readonly CassetteExchange[]; readonly source: string }): Report[] {
  const { header } = cassette
  const segments: Segment[] = []
  const current = new Map<string, Segment>()
  const epochs = new Map<string, number>()
  const open = (run: string): Segment => {
    const epoch = (epochs.get(run) ?? 0) + 1
    epochs.set(run, epoch)
    const segment: Segment = {
      run: epoch === 1 ? run : `${run}~${epoch}`,
      calls: [],
      dropped: 0,
      coverage: new Map(header.rules.map((rule) => [rule.name, { eligible: 0, selected: 0, triggered: 0 }])),
      effects: [],
      refused: 0,
    }
    segments.push(segment)
    current.set(run, segment)
    return segment
  }
  let order = 0
  // An empty cassette is one empty run, so contracts still have something to establish.
  if (cassette.exchanges.length === 0) open('default')
  for (const exchange of cassette.exchanges) {
    let segment = current.get(exchange.run) ?? open(exchange.run)
    if (exchange.call === null) {
      segment.refused++
      continue
    }
    if (exchange.call === 1 && segment.calls.length + segment.dropped > 0) segment = open(exchange.run)
    const call = callRecordOf(exchange)
    const callPath = callPathName(call, header.routes)
    for (const rule of header.rules) {
      const counts = segment.coverage.get(rule.name) as CoverageCounts
      if (isEligible(rule, call.route, call.ordinal, callPath)) counts.eligible++
      if (call.fault === rule.name) {
        counts.selected++
        if (call.injected) counts.triggered++
      }
    }
    if (segment.calls.length < ITEMIZED_CALLS_LIMIT) segment.calls.push(call)
    else segment.dropped++
    for (const effect of exchange.effects) segment.effects.push({ ...effect, call: call.id, order: order++ })
  }
  // Claims were judged when the cassette was written, against the run as it stood then: its last segment.
  const claims = new Map<Segment, NonNullable<Report['claims']>>()
  for (const { run, ...claim } of header.claims ?? []) {
    const segment = current.get(run) ?? open(run)
    const list = claims.get(segment) ?? []
    if (list.length === 0) claims.set(segment, list)
    list.push(claim)
  }
  return segments.map((segment) => {
    // Identities are renumbered in first-seen order, keeping which effects share one.
    const effects = segment.effects.sort((a, b) => a.at - b.at || a.order - b.order)
    const renumbered = new Map<number, number>()
    const report = {
      version: 1 as const,
      kind: REPORT_KIND,
      toolstorm: header.toolstorm,
      run: segment.run,
      seed: header.seed,
      clock: header.clock,
      maxCalls: header.maxCalls,
      routes: header.routes,
      rules: header.rules,
      coverage: Object.fromEntries(segment.coverage),
      calls: segment.calls,
      droppedCalls: segment.dropped,
      effects: effects.slice(0, 10_000).map(({ name, key, call, at, identity, redacted }) => {
        let id = renumbered.get(identity)
        if (id === undefined) renumbered.set(identity, (id = renumbered.size + 1))
        return { name, key, call, at, identity: id, redacted }
      }),
      budgetRejections: segment.refused,
      ...(claims.has(segment) ? { claims: claims.get(segment) } : {}),
    }
    return validateReport(report, `the cassette ${cassette.source}`, `$[run ${JSON.stringify(segment.run)}]`)
  })
}
