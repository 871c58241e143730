/**
 * The flight recorder (`--incidents DIR`): every run's recent exchanges are held in a bounded
 * window; when the run ends (no exchange for `runIdleMs`, an explicit end, or the proxy stopping)
 * it is kept only if something went wrong in it (incident-triggers.ts), as one small, complete,
 * redacted cassette with its report in DIR (incident-store.ts). Runs that went fine cost memory
 * while they run, and nothing on disk.
 *
 * Bounded: a run's window holds its last `windowExchanges` exchanges of the last `windowSeconds`
 * (the earlier ones are dropped and counted in its incident), all windows together at most
 * `maxBufferBytes` (the oldest exchanges go first), runs open at most `maxOpenRuns` (the one idle
 * longest is decided first). A run that ended and was not kept lingers for `runIdleMs`, so a
 * `POST /incidents` that comes just after its end still keeps it.
 * @see ../../docs/incidents.md
 */
import type { CassetteExchange, StoredEffect } from '../cassette/format/cassette-schema.js'
import { Cassette } from '../cassette/format/cassette.js'
import { cutExchanges } from '../cassette/format/cut-exchanges.js'
import type { CassetteRecorder } from '../cassette/record/cassette-recorder.js'
import type { RunLedger } from '../engine/ledger/run-ledger.js'
import type { Report } from '../engine/schema/report.js'
import { AdminApiError } from '../errors.js'
import { contractChecked, type ContractCheckedEvent } from '../contracts/contract-events.js'
import { subscribe, unsubscribe } from 'node:diagnostics_channel'
import { exchangeTriggers, reportTriggers, type IncidentTrigger } from './incident-triggers.js'
import type { IncidentEntry, IncidentStore } from './incident-store.js'

export interface FlightRecorderOptions {
  /** A run with no exchange for this long has ended (default 30,000 ms). */
  readonly runIdleMs?: number | undefined
  /** Exchanges a run's window holds at most (default 1,000). */
  readonly windowExchanges?: number | undefined
  /** Seconds of a run a window holds at most (default 600). */
  readonly windowSeconds?: number | undefined
  /** Bytes all windows hold together at most (default 256 MiB). */
  readonly maxBufferBytes?: number | undefined
  /** Runs open at once at most (default 10,000). */
  readonly maxOpenRuns?: number | undefined
  /** Claims one incident per run with the other replicas (`--state`): true when this replica is the one to write it. */
  readonly claimRun?: ((run: string) => Promise<boolean>) | undefined
  /** Where the report of a run comes from (the storm's ledger, or every replica's). */
  readonly ledger: RunLedger
  /** Told of each incident kept (a console line). */
  readonly onKept?: ((entry: IncidentEntry) => void) | undefined
  /** Told when an incident could not be written. */
  readonly onError?: ((error: unknown) => void) | undefined
  /** What an incident's file is named after (default: its run): the vitest fixture names it after the test. */
  readonly label?: ((run: string) => string) | undefined
}

interface Held {
  readonly exchange: CassetteExchange
  readonly at: number
  readonly bytes: number
}

interface RunWindow {
  readonly run: string
  readonly held: Held[]
  /** Exchanges dropped from the front of the window. */
  dropped: number
  lastAt: number
  readonly triggers: IncidentTrigger[]
  /** When it ended without being kept (it lingers for a late mark). */
  endedAt: number | null
}

export const DEFAULT_RUN_IDLE_MS = 30_000
const DEFAULT_WINDOW_EXCHANGES = 1000
const DEFAULT_WINDOW_SECONDS = 600
const DEFAULT_BUFFER_BYTES = 256 * 1024 * 1024
const DEFAULT_OPEN_RUNS = 10_000
/** Triggers kept per run (the rest are counted in the first ones). */
const MAX_TRIGGERS = 50
/** How long ending or marking a run waits for the lines of exchanges still being made. */
const CATCH_UP_MS = 1000
/** Late effects are found by their exchange's place in the recording, for this many exchanges. */
const LATE_EFFECT_WINDOW = 4096

/** Bytes an exchange takes in memory, near enough: its bodies plus a line's worth of fields. */
function weigh(exchange: CassetteExchange): number {
  const body = (stored: { data: string } | null | undefined) => stored?.data.length ?? 0
  return 1024 + body(exchange.request.body) + body(exchange.response?.body) + body(exchange.upstream?.body)
}

export class FlightRecorder {
  readonly store: IncidentStore
  readonly #recorder: CassetteRecorder
  readonly #options: FlightRecorderOptions
  readonly #open = new Map<string, RunWindow>()
  /** Runs that ended, not kept, lingering for a late `POST /incidents`. */
  readonly #ended = new Map<string, RunWindow>()
  readonly #positions = new Map<number, CassetteExchange>()
  #bytes = 0
  #timer: NodeJS.Timeout | null = null
  #deciding: Promise<void> = Promise.resolve()
  /** Runs decided (kept or not), and exchanges dropped from windows, since start. */
  readonly counts = { decided: 0, kept: 0, droppedExchanges: 0, notOurs: 0 }
  readonly #onContract = (message: unknown): void => {
    const event = message as ContractCheckedEvent
    if (event.storm === this.#recorder.storm.nonce && !event.passed) this.contractFailed(event.run, event.failed.join('; ') || 'a contract failed')
  }

  constructor(recorder: CassetteRecorder, store: IncidentStore, options: FlightRecorderOptions) {
    this.#recorder = recorder
    this.store = store
    this.#options = options
    recorder.listen({
      exchange: (exchange, run) => this.#add(exchange, run),
      lateEffects: (position, effects) => this.#lateEffects(position, effects),
    })
    const idle = options.runIdleMs ?? DEFAULT_RUN_IDLE_MS
    this.#timer = setInterval(() => void this.#sweep(), Math.max(50, Math.min(1000, idle / 4)))
    this.#timer.unref()
    subscribe(contractChecked.name, this.#onContract)
  }

  /** Runs whose window is open now. */
  get openRuns(): number {
    return this.#open.size
  }

  /** Bytes the windows hold. */
  get bufferedBytes(): number {
    return this.#bytes
  }

  #add(exchange: CassetteExchange, run: string): void {
    const now = Date.now()
    let window = this.#open.get(run)
    if (!window) {
      // A run that ended and comes back is the same run: its lingering window continues.
      window = this.#ended.get(run) ?? { run, held: [], dropped: 0, lastAt: now, triggers: [], endedAt: null }
      this.#ended.delete(run)
      window.endedAt = null
      this.#open.set(run, window)
      if (this.#open.size > (this.#options.maxOpenRuns ?? DEFAULT_OPEN_RUNS)) this.#endOldest()
    }
    const bytes = weigh(exchange)
    window.held.push({ exchange, at: now, bytes })
    window.lastAt = now
    this.#bytes += bytes
    for (const trigger of exchangeTriggers(exchange)) if (window.triggers.length < MAX_TRIGGERS) window.triggers.push(trigger)
    this.#positions.set(exchange.seq, exchange)
    if (this.#positions.size > LATE_EFFECT_WINDOW) this.#positions.delete(this.#positions.keys().next().value as number)
    this.#trim(window, now)
    while (this.#bytes > (this.#options.maxBufferBytes ?? DEFAULT_BUFFER_BYTES)) if (!this.#dropOldest()) break
  }

  #lateEffects(position: number, effects: readonly StoredEffect[]): void {
    const exchange = this.#positions.get(position)
    if (!exchange) return
    (exchange.effects as StoredEffect[]).push(...effects)
    // A commit reported after its run was decided (and not kept) may be the one that went wrong: decide again.
    const ended = this.#ended.get(exchange.run)
    if (ended) this.#decideAgain(ended)
  }

  /** Drop what is past the window's bounds from its front. */
  #trim(window: RunWindow, now: number): void {
    const max = this.#options.windowExchanges ?? DEFAULT_WINDOW_EXCHANGES
    const oldest = now - (this.#options.windowSeconds ?? DEFAULT_WINDOW_SECONDS) * 1000
    while (window.held.length > max || (window.held.length > 1 && (window.held[0] as Held).at < oldest)) this.#dropFront(window)
  }

  #dropFront(window: RunWindow): void {
    const held = window.held.shift() as Held
    this.#bytes -= held.bytes
    window.dropped++
    this.counts.droppedExchanges++
  }

  /** Over the memory bound: the oldest exchange held anywhere goes (lingering runs first). */
  #dropOldest(): boolean {
    const lingering = this.#ended.values().next().value as RunWindow | undefined
    if (lingering) {
      this.#forget(lingering, this.#ended)
      return true
    }
    let oldest: RunWindow | null = null
    for (const window of this.#open.values()) if (window.held.length && (!oldest || (window.held[0] as Held).at < (oldest.held[0] as Held).at)) oldest = window
    if (!oldest) return false
    this.#dropFront(oldest)
    return true
  }

  #forget(window: RunWindow, from: Map<string, RunWindow>): void {
    from.delete(window.run)
    for (const held of window.held) this.#bytes -= held.bytes
    window.held.length = 0
  }

  #endOldest(): void {
    let oldest: RunWindow | null = null
    for (const window of this.#open.values()) if (!oldest || window.lastAt < oldest.lastAt) oldest = window
    if (oldest) this.#end(oldest.run, 'too many runs open')
  }

  /** Runs idle long enough end; lingering ones are forgotten once they lingered as long. */
  #sweep(): void {
    const now = Date.now()
    const idle = this.#options.runIdleMs ?? DEFAULT_RUN_IDLE_MS
    for (const window of [...this.#open.values()]) if (now - window.lastAt >= idle) this.#end(window.run, 'idle')
    for (const window of [...this.#ended.values()]) if (now - (window.endedAt as number) >= idle) this.#forget(window, this.#ended)
  }

  /** End a run now (`POST /runs/end`, the run going idle): decide whether to keep it. */
  async end(run: string): Promise<IncidentEntry | null> {
    await this.#caughtUp()
    return this.#end(run, 'explicit')
  }

  /**
   * The lines of the exchanges that finished before now have reached the windows: a run ended or
   * marked right after its last call (a test's teardown) still holds that call. Lines are made in
   * arrival order, so another run's long exchange would hold this one back: at most 1 s.
   */
  async #caughtUp(): Promise<void> {
    let timer: NodeJS.Timeout | undefined
    await Promise.race([this.#recorder.settled(), new Promise<void>((resolve) => (timer = setTimeout(resolve, CATCH_UP_MS).unref()))])
    clearTimeout(timer)
  }

  #end(run: string, _why: string): Promise<IncidentEntry | null> {
    const window = this.#open.get(run)
    if (!window) return Promise.resolve(null)
    this.#open.delete(run)
    return this.#decide(window, [])
  }

  /**
   * Mark a run as an incident (`POST /incidents`: a person or an alert saw something): kept when it
   * ends, or now if it already ended and still lingers. Throws when its exchanges are no longer held.
   */
  async mark(run: string, reason: string): Promise<{ state: 'pending' | 'kept' | 'already'; entry: IncidentEntry | null }> {
    await this.#caughtUp()
    const trigger: IncidentTrigger = { why: 'marked', detail: this.#recorder.storm.redactor.text(reason) }
    const open = this.#open.get(run)
    if (open) {
      open.triggers.unshift(trigger)
      return { state: 'pending', entry: null }
    }
    const ended = this.#ended.get(run)
    if (ended) {
      this.#ended.delete(run)
      return { state: 'kept', entry: await this.#decide(ended, [trigger]) }
    }
    const kept = this.store.incidents.findLast((entry) => entry.run === run)
    if (kept) return { state: 'already', entry: kept }
    throw new AdminApiError('ERR_ADMIN_NOT_FOUND', `Failed to keep run "${run}" as an incident: its exchanges are no longer held (a run is held while it runs and for --run-idle after it ended, or it never went through this proxy). Mark it while it runs, or soon after.`)
  }

  /** A failed contract on a run (`POST /contract`): it is an incident when it ends. */
  contractFailed(run: string, detail: string): void {
    const window = this.#open.get(run) ?? this.#ended.get(run)
    if (!window) return
    window.triggers.push({ why: 'contract_failed', detail })
    if (this.#ended.has(run)) this.#decideAgain(window)
  }

  /** A lingering run (ended, not kept) decided again on evidence that came after its end. */
  #decideAgain(window: RunWindow): void {
    this.#ended.delete(window.run)
    void this.#decide(window, [])
  }

  #decide(window: RunWindow, extra: IncidentTrigger[]): Promise<IncidentEntry | null> {
    const decision = this.#deciding.then(async () => {
      this.counts.decided++
      let report: Report | null = null
      try {
        report = await this.#options.ledger.report(window.run)
      } catch {
        // the report is evidence; the exchanges' own triggers still decide
      }
      // A run the ledger no longer has (evicted by --max-runs, a store that failed) is judged on
      // the effects and claims its held exchanges carry, as its cassette reports them.
      const cassette = () => {
        const exchanges = cutExchanges(window.held.map((held) => held.exchange))
        return Cassette.from(this.#recorder.headerFor([window.run], exchanges.length), exchanges, `the incident of run ${window.run}`)
      }
      const held = report === null && window.held.length ? cassette() : null
      const evidence = report ?? held?.toReports()[0] ?? null
      const triggers = [...extra, ...window.triggers, ...(evidence ? reportTriggers(evidence) : [])]
      if (triggers.length === 0 || window.held.length === 0) {
        window.endedAt = Date.now()
        this.#ended.set(window.run, window)
        return null
      }
      // One incident per run between replicas (--state): the one that claims it writes it.
      if (this.#options.claimRun && !(await this.#options.claimRun(window.run))) {
        this.counts.notOurs++
        this.#forget(window, this.#ended)
        return null
      }
      const kept = held ?? cassette()
      // The run's report as the ledger holds it (every call, the window's or not); else as the cassette shows it.
      const entry = await this.store.keep(window.run, kept, evidence ?? kept.toReports()[0], triggers, window.dropped, this.#options.label?.(window.run))
      this.#forget(window, this.#ended)
      if (entry) {
        this.counts.kept++
        this.#options.onKept?.(entry)
      }
      return entry
    })
    this.#deciding = decision.then(
      () => undefined,
      (error: unknown) => this.#options.onError?.(error),
    )
    return decision
  }

  /** Stop: every open run ends and is decided; then the files are complete. */
  async close(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer)
    this.#timer = null
    unsubscribe(contractChecked.name, this.#onContract)
    // The last exchanges' lines first: they may still be on their way.
    await this.#recorder.settled()
    for (const run of [...this.#open.keys()]) void this.#end(run, 'stop').catch(() => undefined)
    await this.#deciding
    await this.store.flush()
  }
}
