/**
 * A cassette as reports: one per run, with the calls, effects and coverage recomputed from the
 * exchanges and the recorded rules, then validated like any saved report. `inspect` and `check`
 * read cassettes through this.
 */
import { callPathName, isEligible } from '../../engine/rules/select.js'
import { ITEMIZED_CALLS_LIMIT } from '../../engine/schema/config.js'
import type { CassetteExchange, CassetteHeader } from './cassette-schema.js'
import type { Continuation } from './segment-lines.js'
import { REPORT_KIND, type CallRecord, type CoverageCounts, type EffectRecord, type Report } from '../../engine/schema/report.js'
import { validateReport } from '../../report/validate-report.js'

interface Segment {
  run: string
  /** A run that goes on from another part: its calls here are numbered from 1 in its report (ids and ordinals less these). */
  offset: { calls: number; ordinals: Record<string, number> } | null
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

/** A continued run's call as its report here numbers it: from 1, its parent only when it is here too. */
function renumbered(call: CallRecord, offset: Segment['offset']): CallRecord {
  if (!offset) return call
  const parent = call.parent !== null && call.parent > offset.calls ? call.parent - offset.calls : null
  return { ...call, id: call.id - offset.calls, ordinal: call.ordinal - (offset.ordinals[call.route] ?? 0), parent }
}

/**
 * One report per run (a run reset mid-recording starts a new report, named `run~2`; so does a run
 * that goes on from another part of a rotated recording, its calls numbered from 1).
 */
export function reportsFromCassette(cassette: { readonly header: CassetteHeader; readonly exchanges: readonly CassetteExchange[]; readonly source: string; readonly continuations?: readonly Continuation[] }): Report[] {
  const { header } = cassette
  const continuations = new Map((cassette.continuations ?? []).map((continuation) => [continuation.seq, continuation]))
  const segments: Segment[] = []
  const current = new Map<string, Segment>()
  const epochs = new Map<string, number>()
  const open = (run: string, offset: Segment['offset'] = null): Segment => {
    const epoch = (epochs.get(run) ?? 0) + 1
    epochs.set(run, epoch)
    const segment: Segment = {
      run: epoch === 1 ? run : `${run}~${epoch}`,
      offset,
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
    const continuation = continuations.get(exchange.seq)
    let segment = continuation?.run === exchange.run ? open(exchange.run, { calls: continuation.calls, ordinals: continuation.ordinals }) : (current.get(exchange.run) ?? open(exchange.run))
    if (exchange.call === null) {
      segment.refused++
      continue
    }
    if (exchange.call === 1 && segment.calls.length + segment.dropped > 0) segment = open(exchange.run)
    const call = renumbered(callRecordOf(exchange), segment.offset)
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
