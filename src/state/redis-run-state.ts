/**
 * A run's state shared by proxy replicas through Redis: the run ledger (the storage port,
 * engine/ledger/run-ledger.ts) over one store, its parts one job each: calls begun and finished
 * with the shared counters (redis-calls.ts), runs' own rules (redis-run-rules.ts), reports and
 * the dashboard's feed (redis-reports.ts), effects and claims (redis-effects.ts), recording
 * (redis-cassette.ts), the proxies' rules (shared-rules.ts), on one connection (redis-store.ts).
 * It is given the storm's decider (engine/call-decider.ts), never the storm: the storm decides,
 * the store counts and keeps. Hash draws need no coordination: every replica computes them alone.
 *
 * @example
 * const state = await connectRedisState(storm, { url: 'redis://127.0.0.1:6379' })
 * const exchange = await state.begin({ method: 'POST', url, headers })
 * @see ../../docs/scale-out.md
 */
import { ErrorReply } from 'redis'
import { ConfigError, ToolstormError } from '../errors.js'
import type { CallDecider } from '../engine/call-decider.js'
import type { Exchange } from '../engine/exchange.js'
import { MemoryLedger } from '../engine/ledger/memory-ledger.js'
import type { FeedChanges, FeedCursor, FeedSnapshot } from '../engine/ledger/run-feed.js'
import type { BeginRequest, EffectOptions, NewClaim, RunLedger } from '../engine/ledger/run-ledger.js'
import { DEFAULT_RUN } from '../engine/run.js'
import type { SpanBatch, StoredClaim } from '../engine/run-claims.js'
import { ITEMIZED_CALLS_LIMIT, type StormConfig } from '../engine/schema/config.js'
import type { EffectRecord, Report } from '../engine/schema/report.js'
import type { CassetteExchange, CassetteHeader } from '../cassette/format/cassette-schema.js'
import { RedisCalls } from './redis-calls.js'
import { RedisCassette } from './redis-cassette.js'
import { RedisClaimLog } from './redis-claims.js'
import { RedisEffects } from './redis-effects.js'
import { RedisRecorders } from './redis-recorders.js'
import { RedisReports } from './redis-reports.js'
import { RedisRunRules } from './redis-run-rules.js'
import { newClient, RedisStore, unavailable, type Client } from './redis-store.js'
import { SharedRules } from './shared-rules.js'
import { DEFAULT_STATE_PREFIX, DEFAULT_STATE_TTL_SECONDS, MAX_SHARED_CASSETTE_BYTES, type RedisStateOptions } from './state-options.js'
import { parseStateUrl, type StateUrl } from './state-url.js'

/** How often a dashboard follower reads the run's streams: other replicas' calls come no other way. */
const FEED_POLL_MS = 250

/** What the store is given of a storm: what decides its calls (a storm has it; the store never holds the storm). */
export interface Decided {
  readonly decider: CallDecider
}

/** Open the store, failing with `ERR_STATE_UNAVAILABLE` (naming the URL) when Redis cannot be reached. */
export async function connectRedisState({ decider }: Decided, options: RedisStateOptions): Promise<RedisRunState> {
  const where = parseStateUrl(options.url)
  if (options.ca !== undefined && !where.tls) throw new ConfigError(`Failed to connect to the state store ${where.shown}: a CA (--state-ca) is for rediss:// URLs (TLS) only.`, { code: 'ERR_USAGE' })
  const client = newClient(where, options.ca)
  try {
    await client.connect()
  } catch (error) {
    await client.destroy()
    throw unavailable(where, error, 'at start')
  }
  const state = new RedisRunState(decider, client, where, options)
  try {
    await state.start(options.rules ?? 'publish', options.follow ?? true)
  } catch (error) {
    await state.close()
    throw error instanceof ErrorReply || error instanceof ToolstormError ? error : unavailable(where, error, 'at start')
  }
  return state
}

export class RedisRunState implements RunLedger {
  readonly #store: RedisStore
  readonly #rules: SharedRules
  readonly #runRules: RedisRunRules
  readonly #calls: RedisCalls
  readonly #reports: RedisReports
  readonly #effects: RedisEffects
  readonly #cassette: RedisCassette
  readonly #local: MemoryLedger
  #subscriber: Client | null = null
  readonly pollMs = FEED_POLL_MS
  /** Which replicas record into a cassette of one name (one writes it: redis-recorders.ts). */
  readonly recorders: RedisRecorders

  constructor(decider: CallDecider, client: Client, where: StateUrl, options: RedisStateOptions) {
    const prefix = options.prefix ?? DEFAULT_STATE_PREFIX
    const store = (this.#store = new RedisStore(client, where, prefix, String(Math.round((options.ttlSeconds ?? DEFAULT_STATE_TTL_SECONDS) * 1000))))
    const command = <T>(send: () => Promise<T>) => store.command(send)
    // This replica's view of the runs its exchanges belong to: their rules follow the store's, their followers are told.
    const local = (this.#local = new MemoryLedger(decider))
    this.#runRules = new RedisRunRules(store, decider, (run) => local.syncRules(run))
    this.#calls = new RedisCalls(store, decider, this.#runRules, local)
    const onApplied = (version: number) => {
      local.syncRules()
      options.onRulesApplied?.(version)
    }
    this.#rules = new SharedRules({ decider, connection: client, key: `${prefix}:rules`, source: where.shown, command, onApplied })
    const claims = new RedisClaimLog({ connection: client, ttlMs: Number(store.ttlMs), command })
    this.#reports = new RedisReports(store, decider, this.#runRules, claims, this.#calls.unavailable)
    this.#effects = new RedisEffects(store, decider, claims)
    this.#cassette = new RedisCassette(store, String(options.maxRunBytes ?? MAX_SHARED_CASSETTE_BYTES))
    this.recorders = new RedisRecorders({ connection: client, prefix, ttlMs: Number(store.ttlMs), command })
  }

  /** The store's URL as messages show it (no password). */
  get shownUrl(): string {
    return this.#store.where.shown
  }

  /** Round trips to Redis so far (measured by the benchmark and the tests). */
  get roundTrips(): number {
    return this.#store.roundTrips
  }

  /** Publish or adopt the rules, then follow other replicas' changes. */
  async start(rules: 'publish' | 'adopt', follow: boolean): Promise<void> {
    if (rules === 'publish') await this.#rules.share()
    else await this.#rules.check()
    if (!follow) return
    const subscriber = this.#store.client.duplicate()
    subscriber.on('error', () => undefined)
    await subscriber.connect()
    this.#subscriber = subscriber
    await this.#rules.follow(subscriber)
  }

  /** Make `config` the rules of every replica (`PUT /rules`). */
  publishRules(config: StormConfig): Promise<void> {
    return this.#rules.publish(config)
  }

  /** The version of the rules this replica serves. */
  get rulesVersion(): number {
    return this.#rules.version
  }

  /**
   * Make `config` one run's own rules on every replica (null: back to the proxies' rules), as
   * `PUT /rules?run=` does in one process: each BEGIN carries the token of the run's rules its
   * replica decides by, and one that meets another token is answered these rules instead.
   */
  publishRunRules(run: string, config: StormConfig | null): Promise<void> {
    return this.#runRules.publish(run, config)
  }

  /** Bring one run's own rules as the store holds them to this replica (`GET /rules?run=`). */
  syncRunRules(run: string): Promise<void> {
    return this.#runRules.sync(run)
  }

  /**
   * Start an exchange with the run's shared state: one script decides budget, ordinal, key,
   * eligibility and limits; a second one only when a probabilistic rule's draw needs the key.
   * Throws `StateUnavailableError` when Redis cannot be reached (counted in the run's
   * `stateUnavailable`, whatever the caller does with the request then).
   */
  begin(request: BeginRequest): Promise<Exchange> {
    return this.#calls.begin(request)
  }

  /** Record a committed effect for the exchange `call` names, whichever replica served it. */
  effect(name: unknown, key: unknown, call: string, _options?: EffectOptions): Promise<EffectRecord> {
    return this.#effects.effect(name, key, call)
  }

  /** Count a refused effect report in the run its call id names, else in every run the store keeps. */
  refuseEffect(reason: string, call?: string): Promise<void> {
    return this.#effects.refuseEffect(reason, call)
  }

  /** Keep a claim (already redacted) in the run's shared list, so every replica's report judges it. */
  addClaim(claim: NewClaim): Promise<{ run: string; claim: StoredClaim }> {
    return this.#effects.addClaim(claim)
  }

  /** Keep an OTLP export's claims in the run's shared list, and its spans' parent links and counts beside them. */
  addSpans(named: string | undefined, traceId: string, batch: SpanBatch): Promise<{ run: string; rejected: number }> {
    return this.#effects.addSpans(named, traceId, batch)
  }

  /** Whether Redis holds state for `run`. */
  async hasRun(run: string): Promise<boolean> {
    const store = this.#store
    return (await store.command(() => store.client.exists(store.runKeys(run).state))) === 1
  }

  /** Ids of the runs in the store (oldest first), without the expired ones. */
  async runIds(): Promise<string[]> {
    return (await this.runs()).map((run) => run.id)
  }

  /** The runs in the store (oldest first) with their itemized call counts, without the expired ones. */
  async runs(): Promise<Array<{ id: string; calls: number }>> {
    const store = this.#store
    const ids = await store.command(() => store.client.zRange(store.runsKey, 0, -1))
    // Issued in one tick: node-redis sends them in one write.
    const counts = await store.command(() => Promise.all(ids.map((id) => store.client.hGet(store.runKeys(id).state, 'calls'))))
    const live: Array<{ id: string; calls: number }> = []
    const expired: string[] = []
    ids.forEach((id, i) => {
      const calls = counts[i]
      if (calls !== null && calls !== undefined) live.push({ id, calls: Math.min(Number(calls), ITEMIZED_CALLS_LIMIT) })
      else expired.push(id)
    })
    // The index has no TTL of its own: runs whose keys expired leave it when listed.
    if (expired.length) await store.command(() => store.client.zRem(store.runsKey, expired))
    return live
  }

  /** The merged report of a run: every replica's calls and effects, the shared coverage and counters. */
  async report(runId: string = DEFAULT_RUN): Promise<Report> {
    return (await this.#reports.read(runId)).report
  }

  /** Everything the dashboard shows of a run, from every replica, and the cursor to follow it from. */
  async feedSnapshot(runId: string): Promise<FeedSnapshot> {
    const [{ report, cursor, exists }, runs] = await Promise.all([this.#reports.read(runId), this.runs()])
    return { exists, report, runs, cursor }
  }

  /** What changed in a run since `cursor` on any replica (`reset`: read a snapshot again). */
  feedChanges(runId: string, cursor: FeedCursor): Promise<FeedChanges> {
    return this.#reports.changes(runId, cursor)
  }

  /**
   * Append a recorded exchange of `run` to the run's cassette stream, with the cassette `header`
   * the first time this replica records the run. Not waited for by the exchange; a line Redis
   * could not take is counted in the run's `stateUnavailable`.
   */
  async appendCassette(run: string, line: string, header: string | null): Promise<void> {
    if (!(await this.#cassette.append(run, line, header))) this.#calls.countUnavailable(run)
  }

  /** True for the one replica that claims `name` first (SET NX, living as long as a run's keys): one incident per run between replicas. */
  async claimOnce(name: string): Promise<boolean> {
    const store = this.#store
    return (await store.command(() => store.client.set(`${store.prefix}:once:${name}`, '1', { NX: true, PX: Number(store.ttlMs) }))) === 'OK'
  }

  /** Lines this replica recorded that the run's bounds refused (they are counted in Redis too). */
  get cassetteRefused(): number {
    return this.#cassette.refused
  }

  /**
   * The cassette of `runs` (every run in the store when null) as every replica recorded it: the
   * exchanges in call order (the order Redis began them), numbered again, each with the effects
   * any replica received for its call. `header` is null when no replica recorded these runs.
   */
  async assembleCassette(runs: readonly string[] | null): Promise<{ header: CassetteHeader | null; exchanges: CassetteExchange[]; dropped: number }> {
    return this.#cassette.assemble(runs ?? (await this.runIds()), (run) => this.report(run))
  }

  /** Forget one run (or every run) in the store and in this replica. */
  async reset(run?: string): Promise<void> {
    const store = this.#store
    const ids = run === undefined ? await store.command(() => store.client.zRange(store.runsKey, 0, -1)) : [run]
    for (const id of ids) {
      const keys = store.runKeys(id)
      await store.command(() => store.client.del([keys.state, keys.keys, keys.exchanges, keys.calls, keys.effects, keys.cassette, keys.running, keys.claims, keys.spans, keys.quota]))
      await store.command(() => store.client.zRem(store.runsKey, id))
      this.#calls.unavailable.delete(id)
    }
    this.#local.forget(run)
  }

  async close(): Promise<void> {
    this.#rules.stop()
    // What this replica served without Redis goes to the runs' shared counts, or every other reader misses it.
    if (this.#store.client.isOpen) await this.#calls.flushUnavailable()
    const subscriber = this.#subscriber
    this.#subscriber = null
    await subscriber?.close().catch(() => subscriber.destroy())
    if (this.#store.client.isOpen) await this.#store.client.close().catch(() => this.#store.client.destroy())
  }
}
