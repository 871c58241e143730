/**
 * The storm's own runs behind the storage port (run-ledger.ts): what a single proxy, intercept()
 * and MSW handlers keep in memory.
 */
import { EffectError } from '../../errors.js'
import type { Run } from '../run.js'
import type { BeginRequest, Storm } from '../storm.js'
import type { FeedChanges, FeedCursor, FeedSnapshot } from './run-feed.js'
import type { EffectOptions, RunLedger } from './run-ledger.js'

/**
 * How often a dashboard follower reads a run kept in memory: calls and effects are announced on
 * the evidence channels; only refusals by the budget and claims come without an event.
 */
const FEED_POLL_MS = 1_000
/** A run id that cannot be a header value: the report of a run not seen yet, under the storm's rules. */
const NO_RUN = '\u0000'

const ledgers = new WeakMap<Storm, MemoryLedger>()

/** The memory ledger of `storm` (one per storm). */
export function memoryLedger(storm: Storm): MemoryLedger {
  let ledger = ledgers.get(storm)
  if (!ledger) ledgers.set(storm, (ledger = new MemoryLedger(storm)))
  return ledger
}

export class MemoryLedger implements RunLedger {
  readonly #storm: Storm
  readonly pollMs = FEED_POLL_MS
  /** Marks each run kept (a feed cursor's `start`): a run reset and begun again is another run. */
  readonly #marks = new WeakMap<Run, string>()
  #marked = 0

  constructor(storm: Storm) {
    this.#storm = storm
  }

  begin(request: BeginRequest) {
    return this.#storm.begin(request)
  }

  async report(run?: string) {
    return this.#storm.report(run)
  }

  async runIds() {
    return this.#storm.runIds()
  }

  async runs() {
    // Calls started, itemized or not, as the shared store counts them.
    return this.#storm.runIds().map((id) => ({ id, calls: this.#storm.run(id).callCount }))
  }

  async reset(run?: string) {
    this.#storm.reset(run)
  }

  async effect(name: unknown, key: unknown, call: string, options: EffectOptions = {}) {
    // The exchange id is the capability: only the forwarded request carried it.
    if (!options.trusted && !this.#storm.knowsExchange(call)) {
      throw new EffectError('ERR_EFFECT_INVALID', 'Failed to record an effect: the call id names no live exchange. Pass the x-toolstorm-call header of the request being served.')
    }
    return this.#storm.effect(name as string, key as string, { call })
  }

  async publishRules() {}

  async feedSnapshot(id: string): Promise<FeedSnapshot> {
    const storm = this.#storm
    const run = storm.hasRun(id) ? storm.run(id) : null
    const report = storm.report(run ? id : NO_RUN)
    return {
      exists: run !== null,
      report: run ? report : { ...report, run: id },
      runs: await this.runs(),
      cursor: { calls: '-', effects: String(run?.effects.length ?? 0), start: run ? this.#mark(run) : null },
    }
  }

  async feedChanges(id: string, cursor: FeedCursor): Promise<FeedChanges> {
    const storm = this.#storm
    const run = storm.hasRun(id) ? storm.run(id) : null
    const start = run ? this.#mark(run) : null
    // A run that began after the snapshot (start null then) is the run the follower asked for.
    if (start !== cursor.start && cursor.start !== null) {
      return { reset: true, cursor, calls: [], running: [], effects: [], coverage: {}, stats: { calls: 0, droppedCalls: 0, budgetRejections: 0 }, runCount: 0, more: false }
    }
    const read = cursor.start === null ? 0 : Number(cursor.effects)
    const effects = run ? run.effects.slice(read) : []
    return {
      reset: false,
      cursor: { calls: '-', effects: String(read + effects.length), start },
      // Calls this process serves reach the follower live (the evidence channels).
      calls: [],
      running: [],
      effects,
      coverage: run ? Object.fromEntries(run.coverage) : {},
      stats: run ? { calls: run.callCount, droppedCalls: run.droppedCalls, budgetRejections: run.budgetRejections } : { calls: 0, droppedCalls: 0, budgetRejections: 0 },
      runCount: storm.runIds().length,
      more: false,
      claims: storm.claimsOf(id) ?? [],
    }
  }

  #mark(run: Run): string {
    let mark = this.#marks.get(run)
    if (mark === undefined) this.#marks.set(run, (mark = String(++this.#marked)))
    return mark
  }
}
