/**
 * What the dashboard's event stream reads of a run shared by replicas (`--state`): a snapshot of
 * the run from every replica, then what changed since, read on from a cursor in the run's streams.
 * Implemented by the Redis store (redis-run-state.ts); the types live apart so the dashboard does
 * not load the Redis client.
 * @see ../../docs/dashboard.md#replicas
 */
import type { CallRecord, CoverageCounts, EffectRecord, Report } from '../engine/schema/report.js'

/** Where a follower of a run has read up to. */
export interface FeedCursor {
  /** Last entry read of the calls stream (`-`: none yet). */
  readonly calls: string
  /** Last entry read of the effects stream (`-`: none yet). */
  readonly effects: string
  /** The run's start in Redis: another start means the run was reset. */
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
  /** Calls finished on any replica since the cursor. */
  readonly calls: readonly CallRecord[]
  /** Calls running on any replica now (as the merged report lists them: `outcome: 'running'`). */
  readonly running: readonly CallRecord[]
  /** Effects reported to any replica since the cursor. */
  readonly effects: readonly EffectRecord[]
  readonly coverage: Readonly<Record<string, CoverageCounts>>
  readonly stats: { readonly calls: number; readonly droppedCalls: number; readonly budgetRejections: number }
  /** How many runs the store holds (a change: the run list changed). */
  readonly runCount: number
  /** More entries are waiting than one read returns. */
  readonly more: boolean
}

/** A run's evidence across replicas (the shared store). */
export interface RunFeed {
  feedSnapshot(run: string): Promise<FeedSnapshot>
  feedChanges(run: string, cursor: FeedCursor): Promise<FeedChanges>
  /** The runs in the store with their call counts. */
  runs(): Promise<Array<{ id: string; calls: number }>>
}
