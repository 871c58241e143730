/** A short summary of a cassette for `inspect`: what was recorded and how each exchange ended. */
import { CutBodyTally } from './cut-bodies.js'
import type { Cassette } from './cassette.js'
import type { CassetteHeader } from './cassette-schema.js'

export interface CassetteSummary {
  /** The cassette file's format version (its header's), not a version of this summary. */
  readonly version: CassetteHeader['version']
  readonly kind: 'toolstorm.cassette'
  readonly source: string
  readonly recorded: string
  readonly exchanges: number
  /** How exchanges ended for the client: response, reset, error, cancelled. */
  readonly outcomes: Record<string, number>
  /** Statuses the client received. */
  readonly statuses: Record<string, number>
  /** Injected faults by kind. */
  readonly faults: Record<string, number>
  readonly effects: number
  /** Bodies stored as a prefix only (raise the body limit to keep them whole). */
  readonly truncatedBodies: number
  /** Requests answered before their body was read (replay does not compare those bodies). */
  readonly unknownRequestBodies: number
  /** Responses recorded as event streams (events with their timing). */
  readonly streams: number
  /** Recordings in the file (more than one: recorders appended to it, docs/cassettes.md#recording-into-an-existing-cassette). */
  readonly segments: number
  /** Segments that did not end cleanly (the recorder was killed or crashed). */
  readonly stoppedSegments: number
  /** Bytes of an interrupted last line, skipped. */
  readonly interruptedBytes: number
}

export function summarizeCassette(cassette: Cassette): CassetteSummary {
  const outcomes: Record<string, number> = {}
  const statuses: Record<string, number> = {}
  const faults: Record<string, number> = {}
  let effects = 0
  const cut = new CutBodyTally()
  let unknown = 0
  let streams = 0
  for (const exchange of cassette.exchanges) {
    outcomes[exchange.outcome] = (outcomes[exchange.outcome] ?? 0) + 1
    if (exchange.response && exchange.outcome === 'response') statuses[exchange.response.status] = (statuses[exchange.response.status] ?? 0) + 1
    if (exchange.fault?.injected) faults[exchange.fault.kind] = (faults[exchange.fault.kind] ?? 0) + 1
    effects += exchange.effects.length
    cut.add(exchange)
    if (exchange.request.bodyUnknown) unknown++
    if (exchange.response?.stream) streams++
  }
  return {
    version: cassette.header.version,
    kind: 'toolstorm.cassette',
    source: cassette.header.source,
    recorded: cassette.header.recorded,
    exchanges: cassette.exchanges.length,
    outcomes,
    statuses,
    faults,
    effects,
    truncatedBodies: cut.summary().count,
    unknownRequestBodies: unknown,
    streams,
    segments: cassette.segments.length,
    stoppedSegments: cassette.segments.filter((segment) => !segment.ended).length,
    interruptedBytes: cassette.interruptedBytes,
  }
}

/** The summary as the lines `inspect` prints before the per-run summaries. */
export function formatCassetteSummary(summary: CassetteSummary): string[] {
  const list = (counts: Record<string, number>) => Object.entries(counts).map(([name, count]) => `${name} ${count}`).join(', ') || 'none'
  const lines = [
    `Valid cassette v${summary.version}: ${summary.exchanges} exchanges, ${summary.effects} effects (recorded ${summary.recorded} via ${summary.source})`,
    `  outcomes: ${list(summary.outcomes)}; statuses: ${list(summary.statuses)}`,
  ]
  if (summary.truncatedBodies) lines.push(`  truncated bodies: ${summary.truncatedBodies} (cut at the body limit: only a prefix is stored; replay breaks such a response off after it and fails unless --allow-truncated)`)
  if (summary.streams) lines.push(`  event streams: ${summary.streams} (recorded event by event; replay --speed recorded keeps their timing)`)
  if (summary.segments > 1) lines.push(`  segments: ${summary.segments} (recordings appended to one another; a run in two of them is reported as two runs)`)
  if (summary.stoppedSegments) lines.push(`  segments without an end line: ${summary.stoppedSegments} (still recording, or stopped by a kill -9 or a crash: every exchange it wrote is here)`)
  if (summary.interruptedBytes) lines.push(`  an interrupted write: the last ${summary.interruptedBytes} bytes are not a complete line and were skipped`)
  if (summary.unknownRequestBodies) lines.push(`  requests answered before their body was read: ${summary.unknownRequestBodies} (replay does not compare those bodies)`)
  return lines
}
