/**
 * The feed port: what the dashboard's event stream reads of a run, whatever keeps it. A snapshot
 * of the run, then what changed since, read on from a cursor. In memory (memory-ledger.ts) the
 * cursor is a place in the run's effects; with a shared store (`--state`, Redis:
 * src/state/redis-run-state.ts) a place in the run's streams, so a follower sees every replica.
 * Calls this process serves reach the stream live from the evidence channels, either way.
 * @see ../../../docs/dashboard.md#the-event-stream
 */
import type { CallRecord, CoverageCounts, EffectRecord, RefusedEffects, Report } from '../schema/report.js'

/** Where a follower of a run has read up to. */
export interface FeedCursor {
  /** Last entry read of the calls stream (`-`: none yet; in memory always `-`: calls come live). */
  readonly calls: string
  /** Last entry read of the effects stream (`-`: none yet), or in memory how many effects were read. */
  readonly effects: string
  /** The run's start as the store marks it (null: no run yet): another start means the run was reset. */
  readonly start: string | null
}

export interface FeedSnapshot {
  readonly exists: boolean
  readonly report: Report
  readonly runs: ReadonlyArray<{ readonly id: string; readonly calls: number }>
  readonly cursor: FeedCursor
}

export interface FeedChanges {
  /** The run was reset or expired since the cursor: read a snapshot again. */
  readonly reset: boolean
  readonly cursor: FeedCursor
  /** Calls finished on any replica since the cursor (in memory none: they came live). */
  readonly calls: readonly CallRecord[]
  /** Calls running on any replica now (as the merged report lists them: `outcome: 'running'`). */
  readonly running: readonly CallRecord[]
  /** Effects reported to any replica since the cursor. */
  readonly effects: readonly EffectRecord[]
  readonly coverage: Readonly<Record<string, CoverageCounts>>
  readonly stats: { readonly calls: number; readonly droppedCalls: number; readonly budgetRejections: number; readonly refusedEffects?: RefusedEffects }
  /** How many runs the store holds (a change: the run list changed). */
  readonly runCount: number
  /** More entries are waiting than one read returns. */
  readonly more: boolean
  /** The run's claims, judged (docs/claims.md), when the store judges them as they arrive (memory). */
  readonly claims?: Report['claims']
}

/** A run's evidence as a follower reads it. */
export interface RunFeed {
  /**
   * How often a follower reads changes, in milliseconds: what no channel event announces (another
   * replica's calls; refusals by the budget; claims).
   */
  readonly pollMs: number
  feedSnapshot(run: string): Promise<FeedSnapshot>
  feedChanges(run: string, cursor: FeedCursor): Promise<FeedChanges>
  /** The runs in the store with their call counts. */
  runs(): Promise<Array<{ id: string; calls: number }>>
}
