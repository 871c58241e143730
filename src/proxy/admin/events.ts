/**
 * `GET /events?run=ID`: one run's evidence as server-sent events, for the dashboard.
 *
 * The stream opens with a `snapshot` (the run's report, already redacted, and the list of runs),
 * then sends a `batch` at most every `flushMs` with the calls that started or changed, the new
 * effects, the run's coverage and counters. A reset of the run (or new rules) sends a fresh
 * `snapshot`. One path whatever keeps the run: the stream reads it through the feed port
 * (engine/ledger/run-feed.ts: the storm's memory, or Redis with `--state`), and the calls this
 * process serves come live from the evidence channels, only while a dashboard is connected
 * (`channels.*.hasSubscribers` keeps the hot path free otherwise).
 * Exchange ids never leave the server: they are capabilities for effect reports.
 *
 * @see ../../../docs/dashboard.md#the-event-stream
 */
import diagnostics from 'node:diagnostics_channel'
import type http from 'node:http'
import { AdminApiError } from '../../errors.js'
import { channels, type EffectEvent, type ExchangeEvent, type RunEvent } from '../../engine/evidence/channels.js'
import type { CallRecord, CoverageCounts, EffectRecord, RefusedEffects, Report } from '../../engine/schema/report.js'
import { DEFAULT_RUN, type Storm } from '../../engine/storm.js'
import type { FeedCursor, RunFeed } from '../../engine/ledger/run-feed.js'

/** A run in the run selector. */
export interface RunSummary {
  readonly id: string
  /** Calls started, itemized or not (refusals excluded). */
  readonly calls: number
}

/** A run's counters that change without an exchange event (refusals by the budget, effect reports refused). */
export interface RunStats {
  readonly calls: number
  readonly droppedCalls: number
  readonly budgetRejections: number
  /** Effect reports refused while the run was kept: its effects may be incomplete, so the checks on effects fail. */
  readonly refusedEffects?: RefusedEffects
}

/** `event: snapshot`: everything the dashboard shows for the run, replacing what it had. */
export interface StreamSnapshot {
  readonly run: string
  /** False when the run has not been seen yet (or was reset): the report is then empty. */
  readonly exists: boolean
  readonly runs: readonly RunSummary[]
  readonly report: Report
  /** Redaction settings are never sent; only how many there are. */
  readonly redaction: { readonly keys: number; readonly secrets: number }
}

/** `event: batch`: what changed since the last event. */
export interface StreamBatch {
  readonly run: string
  /** Calls that started or changed (by `id`; a later copy replaces an earlier one). */
  readonly calls: readonly CallRecord[]
  /** Effects reported since the last event, in commit order. */
  readonly effects: readonly EffectRecord[]
  readonly coverage: Readonly<Record<string, CoverageCounts>>
  readonly stats: RunStats
  /** Present when runs appeared or went away. */
  readonly runs?: readonly RunSummary[]
  /** The run's claims, judged, every one of them: present when they changed (docs/claims.md). */
  readonly claims?: Report['claims']
}

export interface EventStreamOptions {
  /** Batching interval in milliseconds. Default 100. */
  readonly flushMs?: number
  /**
   * Where the run is read: the storm's memory ledger by default; with replicas sharing runs
   * (`--state`) the shared store, so the stream shows the run as every replica saw it.
   */
  readonly feed?: RunFeed
  /** How often the feed is read while a stream is open, in milliseconds. Default: the feed's `pollMs` (memory 1 000, Redis 250). */
  readonly pollMs?: number
  /** Keep-alive comment interval in milliseconds. Default 15 000. */
  readonly heartbeatMs?: number
  /** Streams open at once. Default 16. */
  readonly maxStreams?: number
  /**
   * Calls kept for a stream whose client is not taking its events (its socket buffer
   * is full). Past this many they are dropped, and the client gets a fresh snapshot when it reads
   * again: a subscriber that stops reading costs a bounded amount. Default 1000.
   */
  readonly maxPending?: number
}

export type AdminRoute = (req: http.IncomingMessage, res: http.ServerResponse, url: URL) => boolean | Promise<boolean>

export interface EventStreams {
  /** Handles `GET /events` (behind the admin token). */
  readonly route: AdminRoute
  /** Streams open now. */
  readonly size: number
  /** End every stream (the proxy is closing). */
  close(): void
}

/** How often the stream checks for new rules and counts toward its keep-alive, in milliseconds. */
const TICK_MS = 1_000
/**
 * Calls a stream remembers having shown: the oldest are forgotten past this many.
 * A call still running after so many others started may then be listed twice, which is harmless
 * (a later copy replaces an earlier one); without a bound the set grew with every call of the run.
 */
const MAX_LISTED = 10_000

class EventStream {
  readonly run: string
  readonly #res: http.ServerResponse
  readonly #storm: Storm
  readonly #feed: RunFeed
  readonly #flushMs: number
  readonly #maxPending: number
  /** Calls that started or changed since the last event (live from the channels, and from the feed). */
  #calls = new Map<number, CallRecord>()
  #dirty = true
  #runsDirty = false
  #knownRuns = new Set<string>()
  /** The claims last sent (as JSON): a batch carries them again only when they changed. */
  #claims = ''
  /** The rules in force at the last snapshot: new rules (from any client) send a fresh one. */
  #config: object
  #timer: NodeJS.Timeout | null = null
  readonly #tick: NodeJS.Timeout
  #sinceHeartbeat = 0
  readonly #heartbeatTicks: number
  /** Where this stream has read the run up to in the store (null: a snapshot is needed). */
  #cursor: FeedCursor | null = null
  /** Calls of the run this stream has shown: another replica's running copy is sent once. */
  readonly #listed = new Set<number>()
  #runCount = -1
  /** Coverage and counters as last sent (JSON). */
  #sharedKey = ''
  #reading = false
  #readAgain = false
  readonly #poll: NodeJS.Timeout

  constructor(storm: Storm, run: string, res: http.ServerResponse, feed: RunFeed, options: { flushMs: number; heartbeatMs: number; pollMs: number; maxPending: number }) {
    this.#storm = storm
    this.run = run
    this.#res = res
    this.#feed = feed
    this.#flushMs = options.flushMs
    this.#maxPending = options.maxPending
    this.#heartbeatTicks = Math.max(1, Math.round(options.heartbeatMs / TICK_MS))
    this.#config = storm.config
    this.#tick = setInterval(() => this.#onTick(), TICK_MS)
    this.#tick.unref()
    this.#poll = setInterval(() => this.#schedule(), options.pollMs)
    this.#poll.unref()
    res.on('drain', () => this.#schedule())
    this.#schedule(0)
  }

  onCall(run: string, call: CallRecord): void {
    if (run === this.run) {
      if (!this.#dirty) this.#calls.set(call.id, call)
      this.#list(call.id)
      this.#bound()
    } else if (!this.#knownRuns.has(run)) this.#runsDirty = true
    this.#schedule()
  }

  /** An effect of the run: the feed reads it (in commit order) at the next flush. */
  onEffect(run: string): void {
    if (run === this.run) this.#schedule()
  }

  /** A client that is not taking its events: past the bound, what waits for it is dropped for a fresh snapshot once it reads again. */
  #bound(): void {
    if (this.#calls.size <= this.#maxPending || !this.#res.writableNeedDrain) return
    this.#calls.clear()
    this.#dirty = true
  }

  #list(id: number): void {
    this.#listed.add(id)
    if (this.#listed.size > MAX_LISTED) for (const oldest of this.#listed) return void this.#listed.delete(oldest)
  }

  onReset(run: string): void {
    if (run === this.run) this.#dirty = true
    this.#runsDirty = true
    this.#schedule()
  }

  close(): void {
    if (this.#timer) clearTimeout(this.#timer)
    clearInterval(this.#tick)
    clearInterval(this.#poll)
    if (!this.#res.writableEnded) this.#res.end()
  }

  #schedule(ms = this.#flushMs): void {
    this.#timer ??= setTimeout(() => {
      this.#timer = null
      void this.#flush()
    }, ms)
  }

  #onTick(): void {
    if (++this.#sinceHeartbeat >= this.#heartbeatTicks) {
      this.#sinceHeartbeat = 0
      if (!this.#res.writableNeedDrain) this.#res.write(': ping\n\n')
    }
    if (this.#storm.config !== this.#config) this.#dirty = true
    if (this.#dirty) this.#schedule()
  }

  /**
   * The run from the store: a snapshot, then what changed since the cursor (calls this process
   * serves come live from the channels meanwhile). One read at a time; a store that cannot be
   * reached (Redis) is read again at the next poll.
   */
  async #flush(): Promise<void> {
    // A slow client: keep collecting (calls are deduplicated by id) and send once it drained.
    if (this.#res.writableNeedDrain || this.#res.writableEnded) return
    if (this.#reading) {
      this.#readAgain = true
      return
    }
    this.#reading = true
    let snapshotting = false
    const feed = this.#feed
    try {
      if (this.#dirty || this.#cursor === null || this.#storm.config !== this.#config) {
        snapshotting = true
        this.#dirty = false
        this.#config = this.#storm.config
        this.#runsDirty = false
        this.#calls.clear()
        const snapshot = await feed.feedSnapshot(this.run)
        if (this.#res.writableEnded) return
        this.#cursor = snapshot.cursor
        this.#listed.clear()
        for (const call of snapshot.report.calls) this.#list(call.id)
        this.#runCount = snapshot.runs.length
        this.#knownRuns = new Set(snapshot.runs.map((run) => run.id))
        this.#claims = JSON.stringify(snapshot.report.claims ?? [])
        this.#sharedKey = ''
        const { redact } = this.#storm.config
        this.#send('snapshot', { run: this.run, exists: snapshot.exists, runs: snapshot.runs, report: snapshot.report, redaction: { keys: redact.keys.length, secrets: redact.secrets.length } } satisfies StreamSnapshot)
        return
      }
      const changes = await feed.feedChanges(this.run, this.#cursor)
      if (this.#res.writableEnded) return
      if (changes.reset) {
        this.#dirty = true
        this.#readAgain = true
        return
      }
      this.#cursor = changes.cursor
      if (changes.more) this.#readAgain = true
      // A call running on another replica is listed once, as it started (this process's own
      // calls were sent live, richer); a finished call from the store replaces any copy of it.
      for (const call of changes.running) {
        if (this.#listed.has(call.id)) continue
        this.#list(call.id)
        this.#calls.set(call.id, call)
      }
      // A finished call never runs again: its id need not be remembered.
      for (const call of changes.calls) {
        this.#listed.delete(call.id)
        this.#calls.set(call.id, call)
      }
      const sharedKey = JSON.stringify([changes.coverage, changes.stats])
      const claimsKey = changes.claims === undefined ? this.#claims : JSON.stringify(changes.claims)
      const claimsChanged = claimsKey !== this.#claims
      const runsChanged = this.#runsDirty || changes.runCount !== this.#runCount
      if (!this.#calls.size && !changes.effects.length && !runsChanged && !claimsChanged && sharedKey === this.#sharedKey) return
      this.#sharedKey = sharedKey
      this.#claims = claimsKey
      const runs = runsChanged ? await feed.runs() : null
      if (runs) {
        this.#runCount = runs.length
        this.#knownRuns = new Set(runs.map((run) => run.id))
      }
      const batch: StreamBatch = {
        run: this.run,
        calls: [...this.#calls.values()],
        effects: [...changes.effects],
        coverage: changes.coverage,
        stats: changes.stats,
        ...(runs ? { runs } : {}),
        ...(claimsChanged ? { claims: changes.claims } : {}),
      }
      this.#calls.clear()
      this.#runsDirty = false
      this.#send('batch', batch)
    } catch {
      // The store is unreachable for now: the next poll reads again from the same cursor (or
      // takes the snapshot it could not).
      if (snapshotting) this.#dirty = true
    } finally {
      this.#reading = false
      if (this.#readAgain) {
        this.#readAgain = false
        this.#schedule()
      }
    }
  }

  #send(event: string, data: unknown): void {
    // JSON never contains a raw newline, so one `data:` line carries the whole event.
    this.#res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`)
  }
}

/** The `GET /events` route for one storm, with its channel subscriptions. */
export function createEventStreams(storm: Storm, options: EventStreamOptions = {}): EventStreams {
  const flushMs = options.flushMs ?? 100
  const heartbeatMs = options.heartbeatMs ?? 15_000
  const maxStreams = options.maxStreams ?? 16
  const feed = options.feed ?? storm.ledger
  const streams = new Set<EventStream>()
  // Channels are process-wide: exchange ids start with the storm's nonce, so keep only ours.
  const prefix = `${storm.nonce}-`

  const onExchange = (message: unknown) => {
    const { run, exchangeId, call } = message as ExchangeEvent
    if (!exchangeId.startsWith(prefix)) return
    for (const stream of streams) stream.onCall(run, call as CallRecord)
  }
  const onEffect = (message: unknown) => {
    const { run, exchangeId } = message as EffectEvent
    if (!exchangeId.startsWith(prefix)) return
    for (const stream of streams) stream.onEffect(run)
  }
  // Reset events carry no exchange id; another storm's reset only costs a fresh snapshot.
  const onReset = (message: unknown) => {
    for (const stream of streams) stream.onReset((message as RunEvent).run)
  }
  const subscriptions: Array<[diagnostics.Channel, (message: unknown) => void]> = [
    [channels.exchangeStart, onExchange],
    [channels.faultApplied, onExchange],
    [channels.exchangeEnd, onExchange],
    [channels.commitReported, onEffect],
    [channels.runReset, onReset],
  ]
  const subscribe = (on: boolean) => {
    for (const [channel, listener] of subscriptions) {
      if (on) channel.subscribe(listener)
      else channel.unsubscribe(listener)
    }
  }

  const route: AdminRoute = (req, res, url) => {
    if (req.method !== 'GET' || url.pathname !== '/events') return false
    if (streams.size >= maxStreams) {
      throw new AdminApiError('ERR_STATE', `Failed to open the event stream: ${maxStreams} streams are already open. Close a dashboard tab and try again.`)
    }
    const run = url.searchParams.get('run') || DEFAULT_RUN
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      'x-content-type-options': 'nosniff',
      'x-accel-buffering': 'no',
    })
    if (streams.size === 0) subscribe(true)
    const stream = new EventStream(storm, run, res, feed, { flushMs, heartbeatMs, pollMs: options.pollMs ?? feed.pollMs, maxPending: options.maxPending ?? 1000 })
    streams.add(stream)
    const end = () => {
      if (!streams.delete(stream)) return
      stream.close()
      if (streams.size === 0) subscribe(false)
    }
    req.socket.setNoDelay(true)
    res.on('close', end)
    return true
  }

  return {
    route,
    get size() {
      return streams.size
    },
    close() {
      for (const stream of [...streams]) {
        streams.delete(stream)
        stream.close()
      }
      subscribe(false)
    },
  }
}
