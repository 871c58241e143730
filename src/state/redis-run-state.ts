/**
 * A run's state shared by proxy replicas through Redis: ordinals, limits, the call budget and key
 * de-duplication are taken atomically by one script per exchange (redis-scripts.ts); finished
 * calls and effects go to the run's streams; the rules live under a version key (shared-rules.ts).
 * Hash draws need no coordination: every replica computes them alone (decision.ts).
 *
 * @example
 * const state = await connectRedisState(storm, { url: 'redis://127.0.0.1:6379' })
 * const exchange = await state.begin({ method: 'POST', url, headers })
 * @see ../../docs/scale-out.md
 */
import { createHash, randomBytes } from 'node:crypto'
import tls from 'node:tls'
import { createClient, ErrorReply } from 'redis'
import { ClaimError, ConfigError, EffectError, StateUnavailableError, ToolstormError } from '../errors.js'
import { decide } from '../engine/decision.js'
import type { Exchange } from '../engine/exchange.js'
import { ruleMatches } from '../engine/rules/select.js'
import { identityDigest, type Run } from '../engine/run.js'
import { ITEMIZED_CALLS_LIMIT, type StormConfig } from '../engine/schema/config.js'
import type { CallRecord, CoverageCounts, EffectRecord, Report } from '../engine/schema/report.js'
import { MAX_CASSETTE_CLAIMS, type CassetteClaim, type CassetteExchange, type CassetteHeader } from '../cassette/format/cassette-schema.js'
import type { Rule } from '../engine/schema/rule.js'
import { checkEffectInput, DEFAULT_RUN, MAX_EFFECTS, parseConfig, type BeginRequest, type Storm } from '../engine/storm.js'
import { HEADER_CALL, HEADER_KEY, headerValue } from '../engine/http.js'
import { BEGIN_SCRIPT, CASSETTE_SCRIPT, EFFECT_SCRIPT, FINISH_SCRIPT, REFUSED_SCRIPT, SELECT_SCRIPT } from './redis-scripts.js'
import { DEFAULT_STATE_PREFIX, DEFAULT_STATE_TTL_SECONDS, MAX_SHARED_CASSETTE_BYTES, type RedisStateOptions } from './state-options.js'
import { SharedRules } from './shared-rules.js'
import { RedisClaimLog } from './redis-claims.js'
import { RedisRecorders } from './redis-recorders.js'
import type { StoredClaim } from '../engine/run-claims.js'
import { roundSeconds } from '../engine/clock.js'
import { RedisTokenQuota } from './redis-token-quota.js'
import type { TokenLimitRule } from '../model-calls/faults/token-limit.js'
import type { FeedChanges, FeedCursor, FeedSnapshot } from '../engine/ledger/run-feed.js'
import { parseStateUrl, type StateUrl } from './state-url.js'
import type { EffectOptions, NewClaim, RunLedger } from '../engine/ledger/run-ledger.js'

const ITEMIZED = String(ITEMIZED_CALLS_LIMIT)

/** Stream entries one feed read returns at most (the rest come with the next read). */
const FEED_BATCH = 1000
/** How often a dashboard follower reads the run's streams: other replicas' calls come no other way. */
const FEED_POLL_MS = 250

/** A command that waits longer than this counts as the store being unavailable. */
const COMMAND_TIMEOUT_MS = 2000
/** Reading a whole run's cassette (up to 256 MiB) may take longer than one exchange's command. */
const BULK_READ_TIMEOUT_MS = 60_000

/** What a command that missed its deadline reports (no code: the message is the reason). */
class NoAnswerError extends Error {}

type Client = ReturnType<typeof newClient>

/** Open the store, failing with `ERR_STATE_UNAVAILABLE` (naming the URL) when Redis cannot be reached. */
export async function connectRedisState(storm: Storm, options: RedisStateOptions): Promise<RedisRunState> {
  const where = parseStateUrl(options.url)
  if (options.ca !== undefined && !where.tls) throw new ConfigError(`Failed to connect to the state store ${where.shown}: a CA (--state-ca) is for rediss:// URLs (TLS) only.`, { code: 'ERR_USAGE' })
  const client = newClient(where, options.ca)
  try {
    await client.connect()
  } catch (error) {
    await client.destroy()
    throw unavailable(where, error, 'at start')
  }
  const state = new RedisRunState(storm, client, where, options)
  try {
    await state.start(options.rules ?? 'publish', options.follow ?? true)
  } catch (error) {
    await state.close()
    throw error instanceof ErrorReply || error instanceof ToolstormError ? error : unavailable(where, error, 'at start')
  }
  return state
}

function newClient(where: StateUrl, ca?: string) {
  let connected = false
  const client = createClient({
    ...where.client,
    // Fail fast while disconnected: an exchange is answered 503 (or passed) rather than held.
    disableOfflineQueue: true,
    commandOptions: { timeout: COMMAND_TIMEOUT_MS },
    socket: {
      ...(where.client.socket ?? {}),
      // `ca` replaces the default roots instead of adding to them, so they are listed again.
      ...(ca !== undefined ? { tls: true as const, ca: [...tls.rootCertificates, ca] } : {}),
      connectTimeout: COMMAND_TIMEOUT_MS,
      // Give up at start (exit 2); once connected, keep reconnecting: traffic resumes when Redis returns.
      reconnectStrategy: (retries: number, cause: Error) => (connected ? Math.min(50 * 2 ** retries, 1000) : cause),
    },
  })
  client.on('ready', () => {
    connected = true
  })
  // node-redis emits every socket error; the exchanges that needed Redis report it themselves.
  client.on('error', () => undefined)
  return client
}

function unavailable(where: StateUrl, error: unknown, when: string): StateUnavailableError {
  const reason = reasonOf(error)
  return new StateUnavailableError(`Failed to reach the state store ${where.shown} ${when}: ${reason}. Start Redis there, or fix --state.`, { cause: error })
}

/** A socket error's code (ECONNREFUSED), looked for through node-redis's wrappers; else the message. */
function reasonOf(error: unknown): string {
  let current = error as { code?: unknown; cause?: unknown; originalError?: unknown; socketError?: unknown } | undefined
  for (let depth = 0; depth < 4 && current; depth++) {
    if (typeof current.code === 'string') return current.code
    current = (current.socketError ?? current.originalError ?? current.cause) as typeof current
  }
  return (error as Error)?.message ?? String(error)
}

/** Run ids travel inside exchange ids, so an effect posted to any replica finds its run. */
function encodeRun(run: string): string {
  return Buffer.from(run, 'utf8').toString('base64url')
}

function runOfExchange(id: string): string | null {
  const dot = id.lastIndexOf('.')
  if (dot < 0) return null
  return Buffer.from(id.slice(dot + 1), 'base64url').toString('utf8') || null
}

/** The keys of one run: one hash tag, so one Redis Cluster slot. */
interface RunKeys {
  readonly state: string
  readonly keys: string
  readonly exchanges: string
  readonly calls: string
  readonly effects: string
  readonly cassette: string
  readonly running: string
  readonly claims: string
  /** `token_limit` windows (redis-token-quota.ts). */
  readonly quota: string
  /** The run's own rules (`PUT /rules?run=`): a hash of `token` and `config`, kept across resets as in one process. */
  readonly rules: string
}

type BeginReply = [status: number, start: number, now: number, call?: number, ordinal?: number, key?: string, parent?: number, selected?: string, pending?: number]

/** A BEGIN that met other own rules of the run than those its replica decided by: [2, token, config]. */
const OTHER_RULES = 2
/** BEGINs of one call at most while its run's own rules keep changing under it. */
const MAX_RULE_CHANGES = 5
/** Tokens of runs' own rules remembered (the oldest forgotten first: its run's rules are read again). */
const MAX_RULE_TOKENS = 10_000

export class RedisRunState implements RunLedger {
  readonly #storm: Storm
  readonly #client: Client
  readonly #where: StateUrl
  readonly #prefix: string
  readonly #ttlMs: string
  readonly #rules: SharedRules
  readonly #claims: RedisClaimLog
  readonly #quota: RedisTokenQuota
  readonly #shas = new Map<string, string>()
  #subscriber: Client | null = null
  /** The token of the own rules (the store's) each run's calls are decided by here, by run id. */
  readonly #ruleTokens = new Map<string, string>()
  /** Exchanges answered without the store, per run, not yet added to its shared count. */
  readonly #unavailable = new Map<string, number>()
  /** Calls finished in this event loop turn, per run, written out together. */
  readonly #finishing = new Map<string, { keys: RunKeys; run: string; records: CallRecord[]; ids: string[] }>()
  #cassetteRefused = 0
  /** Round trips to Redis so far (measured by the benchmark and the tests). */
  roundTrips = 0
  readonly pollMs = FEED_POLL_MS
  readonly keepsSpans = false
  /**
   * A command missed its deadline and Redis has not answered since (connected but silent: paused,
   * a frozen host): commands fail at once meanwhile, and one PING at a time asks whether it is back.
   */
  #silent = false
  #probing = false

  constructor(storm: Storm, client: Client, where: StateUrl, options: RedisStateOptions) {
    this.#storm = storm
    this.#client = client
    this.#where = where
    this.#prefix = options.prefix ?? DEFAULT_STATE_PREFIX
    this.#ttlMs = String(Math.round((options.ttlSeconds ?? DEFAULT_STATE_TTL_SECONDS) * 1000))
    this.#quota = new RedisTokenQuota((script, keys, args) => this.#eval(script, keys, args), this.#ttlMs)
    this.#rules = new SharedRules({
      storm,
      connection: client,
      key: `${this.#prefix}:rules`,
      source: where.shown,
      command: (send) => this.#command(send),
      onApplied: options.onRulesApplied,
    })
    this.#claims = new RedisClaimLog({ connection: client, ttlMs: Number(this.#ttlMs), command: (send) => this.#command(send) })
    this.recorders = new RedisRecorders({ connection: client, prefix: this.#prefix, ttlMs: Number(this.#ttlMs), command: (send) => this.#command(send) })
    this.#maxRunBytes = String(options.maxRunBytes ?? MAX_SHARED_CASSETTE_BYTES)
  }

  /** Which replicas record into a cassette of one name (one writes it: redis-recorders.ts). */
  readonly recorders: RedisRecorders
  readonly #maxRunBytes: string

  /** The store's URL as messages show it (no password). */
  get shownUrl(): string {
    return this.#where.shown
  }

  // Key layout (docs/scale-out.md#key-layout) ---------------------------------------------
  #runKeys(run: string): RunKeys {
    const tag = `{${this.#prefix}:${run}}`
    return { state: `${tag}:s`, keys: `${tag}:k`, exchanges: `${tag}:x`, calls: `${tag}:calls`, effects: `${tag}:effects`, cassette: `${tag}:cassette`, running: `${tag}:r`, claims: `${tag}:claims`, quota: `${tag}:q`, rules: `${tag}:rules` }
  }

  get #runsKey(): string {
    return `${this.#prefix}:runs`
  }

  /** Publish or adopt the rules, then follow other replicas' changes. */
  async start(rules: 'publish' | 'adopt', follow: boolean): Promise<void> {
    if (rules === 'publish') await this.#rules.share()
    else await this.#rules.check()
    if (!follow) return
    const subscriber = this.#client.duplicate()
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
  async publishRunRules(run: string, config: StormConfig | null): Promise<void> {
    const key = this.#runKeys(run).rules
    if (config === null) await this.#command(() => this.#client.del(key))
    else {
      const token = `${this.#storm.nonce}-${randomBytes(6).toString('base64url')}`
      await this.#command(() => this.#client.multi().hSet(key, { token, config: JSON.stringify(config) }).pExpire(key, Number(this.#ttlMs)).exec())
    }
    // The caller gives the storm these rules next; until then this replica's calls read them again.
    this.#ruleTokens.delete(run)
  }

  /** Bring one run's own rules as the store holds them to this replica (`GET /rules?run=`). */
  async syncRunRules(run: string): Promise<void> {
    this.#adoptRunRules(run, await this.#command(() => this.#client.hGetAll(this.#runKeys(run).rules)))
  }

  /** The token of the run's own rules this replica decides by: "" for none, "?" when it holds rules of unknown origin. */
  #ruleToken(run: string): string {
    return this.#storm.hasRunConfig(run) ? (this.#ruleTokens.get(run) ?? '?') : ''
  }

  /** Decide `run`'s calls by the own rules the store holds (`stored`: its rules hash), when they are not those already. */
  #adoptRunRules(run: string, stored: { token?: string; config?: string }): void {
    const token = stored.token ?? ''
    if (token === this.#ruleToken(run)) return
    const config = token === '' || !stored.config ? null : parseConfig(JSON.parse(stored.config), `the rules of run "${run}" in ${this.#where.shown}`, this.#storm.faults)
    this.#storm.setRunConfig(run, config)
    this.#ruleTokens.delete(run)
    if (config === null) return
    if (this.#ruleTokens.size >= MAX_RULE_TOKENS) this.#ruleTokens.delete(this.#ruleTokens.keys().next().value as string)
    this.#ruleTokens.set(run, token)
  }

  // Exchanges ------------------------------------------------------------------------------

  /**
   * Start an exchange with the run's shared state: one script decides budget, ordinal, key,
   * eligibility and limits; a second one only when a probabilistic rule's draw needs the key.
   * Throws `StateUnavailableError` when Redis cannot be reached (counted in the run's
   * `stateUnavailable`, whatever the caller does with the request then).
   */
  async begin(request: BeginRequest): Promise<Exchange> {
    try {
      return await this.#begin(request)
    } catch (error) {
      if (error instanceof StateUnavailableError) this.#countUnavailable(this.#storm.runOf(request))
      throw error
    }
  }

  async #begin(request: BeginRequest): Promise<Exchange> {
    const storm = this.#storm
    const runId = storm.runOf(request)
    const method = request.method.toUpperCase()
    const id = `${storm.newExchangeId()}.${encodeRun(runId)}`
    const keys = this.#runKeys(runId)
    // A BEGIN Redis runs after its deadline took a call this replica answered without the store:
    // it is finished there at once (unlisted), so the merged report never shows it running.
    const late = (reply: unknown) => {
      const [status, , , call] = reply as BeginReply
      if (status === 1) void this.#eval(FINISH_SCRIPT, [keys.state, keys.calls, keys.exchanges, keys.running], [this.#ttlMs, ITEMIZED, '', '', id, String(call)]).catch(() => undefined)
    }
    // The run's own rules when it has some (any replica may have set them), else the proxies'.
    for (let attempt = 1; ; attempt++) {
      const config = storm.configOf(runId)
      const route = storm.routeOf(method, request.url, request.reading?.route, runId)
      const path = storm.declaredPathOf(route, method, request.url, request.reading?.route)
      const matching = config.rules.filter((rule) => ruleMatches(rule, route, path))
      // The method and redacted URL list the call as running in the merged report until it finished.
      const args = [this.#ttlMs, String(config.maxCalls ?? -1), route, headerValue(request.headers, HEADER_KEY) || '', id, headerValue(request.headers, HEADER_CALL) ?? '', String(matching.length), method, storm.redactedUrl(request.url.href), ITEMIZED, this.#ruleToken(runId)]
      for (const rule of matching) args.push(...ruleArgs(rule, rule.probability >= 1 ? 'a' : rule.probability <= 0 ? 'n' : 'd'))
      const reply = (await this.#eval(BEGIN_SCRIPT, [keys.state, keys.keys, keys.exchanges, keys.running, keys.rules], args, late)) as BeginReply
      if (reply[0] !== OTHER_RULES) return this.#opened(request, runId, id, keys, config, route, matching, reply, late)
      if (attempt >= MAX_RULE_CHANGES) throw new ToolstormError('ERR_STATE', `Failed to begin a call of run "${runId}": its own rules changed ${MAX_RULE_CHANGES} times while it began. Set a run's rules before its calls.`)
      const [, token, text] = reply as unknown as [number, string, string]
      this.#adoptRunRules(runId, { token, config: text })
    }
  }

  /** The exchange of a call BEGIN took (or refused by the budget), its rule selected. */
  async #opened(request: BeginRequest, runId: string, id: string, keys: RunKeys, config: StormConfig, route: string, matching: Rule[], reply: BeginReply, late: (reply: unknown) => void): Promise<Exchange> {
    const storm = this.#storm
    // Redis is back: add what was served without it to the run's count (not waited for).
    if (this.#unavailable.size > 0) void this.#flushUnavailable(runId, keys.state)
    const [status, startMs, nowMs] = reply
    const run = storm.run(runId)
    // This replica's clock, aligned with the run's start in Redis: call timings are the run's.
    const started = Math.max(0, (nowMs - startMs) / 1000)
    run.start = storm.clock.now() - started
    const view = storm.requestView(request)
    if (status === 0) return storm.refusedExchange(run, id, view, request.url, config.seed)
    const [, , , call, ordinal, key, parent, chosen, pending] = reply as Required<BeginReply>
    if (call === 1) void this.#command(() => this.#client.zAdd(this.#runsKey, { score: startMs, value: runId })).catch(() => undefined)
    let selected = chosen
    if (pending > 0) {
      // A draw decides from here: the key is known now, so every remaining draw is.
      const rest = ['' + ordinal, String(pending), String(matching.length), String(call)]
      for (const rule of matching) rest.push(...ruleArgs(rule, decide(config.seed, rule.name, route, key, rule.probability) ? 'a' : 'n'))
      selected = (await this.#eval(SELECT_SCRIPT, [keys.state, keys.running], rest)) as string
    }
    const rule = selected ? (matching.find((candidate) => candidate.name === selected) ?? null) : null
    let quota
    if (rule?.kind === 'token_limit') {
      try {
        quota = await this.#quota.take(keys.quota, rule as unknown as TokenLimitRule, started)
      } catch (error) {
        // The call was taken in Redis: finish it there (unlisted), as a late BEGIN's is.
        late([1, startMs, nowMs, call])
        throw error
      }
    }
    return storm.openExchange(run, { id, view, url: request.url, route, ordinal, key, rule, callId: call, started, parent: parent || null, seed: config.seed, quota, reading: request.reading, onFinish: (exchange) => this.#finished(keys, exchange) })
  }

  /**
   * Write a finished call out at the end of the event loop turn: after the flow's last hooks
   * (which may add its model call), together with the run's other calls that finished in it.
   */
  #finished(keys: RunKeys, exchange: Exchange): void {
    if (exchange.quota?.admitted) this.#charge(keys, exchange)
    let batch = this.#finishing.get(keys.state)
    if (!batch) {
      batch = { keys, run: exchange.run.id, records: [], ids: [] }
      this.#finishing.set(keys.state, batch)
      if (this.#finishing.size === 1) setImmediate(() => this.#flushFinished())
    }
    batch.records.push(exchange.record as CallRecord)
    batch.ids.push(exchange.id)
  }

  /** Add a `token_limit` call's tokens to its window, once its usage is final (after the flow's last hooks). */
  #charge(keys: RunKeys, exchange: Exchange): void {
    setImmediate(() => {
      const model = exchange.record?.model
      const tokens = (model?.inputTokens ?? 0) + (model?.outputTokens ?? 0)
      // Not counted in stateUnavailable: the call itself may well be written; its tokens are missing from the budget.
      if (tokens > 0) void this.#quota.charge(keys.quota, exchange.rule!.name, exchange.quota!.window, tokens).catch(() => undefined)
    })
  }

  #flushFinished(): void {
    for (const { keys, run, records, ids } of this.#finishing.values()) {
      const args = [this.#ttlMs, String(ITEMIZED_CALLS_LIMIT)]
      records.forEach((record, i) => {
        args.push(record.id <= ITEMIZED_CALLS_LIMIT ? JSON.stringify(record) : '', record.injected && record.fault ? record.fault : '', ids[i] as string, String(record.id))
      })
      this.#eval(FINISH_SCRIPT, [keys.state, keys.calls, keys.exchanges, keys.running], args).catch(() => {
        // Redis went away after these exchanges began: they are missing from the shared report, counted.
        for (let i = 0; i < records.length; i++) this.#countUnavailable(run)
      })
    }
    this.#finishing.clear()
  }

  /** Count an exchange served without the store (answered 503 or passed through). */
  #countUnavailable(run: string): void {
    this.#unavailable.set(run, (this.#unavailable.get(run) ?? 0) + 1)
  }

  async #flushUnavailable(run: string, stateKey: string): Promise<void> {
    const count = this.#unavailable.get(run)
    if (count === undefined) return
    this.#unavailable.delete(run)
    await this.#command(() => this.#client.hIncrBy(stateKey, 'unavailable', count)).catch(() => this.#unavailable.set(run, (this.#unavailable.get(run) ?? 0) + count))
  }

  // Effects, reports, runs -----------------------------------------------------------------

  /** Record a committed effect for the exchange `call` names, whichever replica served it. */
  async effect(name: unknown, key: unknown, call: string, _options?: EffectOptions): Promise<EffectRecord> {
    checkEffectInput(name, key)
    const run = runOfExchange(call)
    if (run === null) throw new EffectError('ERR_EFFECT_INVALID', `Failed to record an effect: no exchange "${call.slice(0, 64)}" in this run's shared state. Was the run reset, or did the request bypass toolstorm?`)
    const keys = this.#runKeys(run)
    const redactor = this.#storm.redactor
    const safeName = redactor.text(name)
    const safeKey = redactor.text(key as string)
    // The identity is of the raw pair; only its digest reaches Redis.
    const digest = identityDigest(name, key as string)
    const reply = (await this.#eval(EFFECT_SCRIPT, [keys.state, keys.exchanges, keys.effects], [
      this.#ttlMs,
      call,
      safeName,
      safeKey,
      digest,
      safeName !== name || safeKey !== key ? '1' : '0',
      String(MAX_EFFECTS),
    ])) as [number, string?]
    if (reply[0] === 0) throw new EffectError('ERR_EFFECT_INVALID', `Failed to record an effect: no exchange "${call.slice(0, 64)}" in this run's shared state. Was the run reset, or did the request bypass toolstorm?`)
    if (reply[0] === -1) throw new EffectError('ERR_EFFECT_LIMIT', `Failed to record an effect: the run already holds ${MAX_EFFECTS} effects.`)
    return JSON.parse(reply[1] as string) as EffectRecord
  }

  /** Count a refused effect report in the run its call id names, else in every run the store keeps. */
  async refuseEffect(reason: string, call?: string): Promise<void> {
    const named = call === undefined ? null : runOfExchange(call)
    const counted = named !== null && (await this.#eval(REFUSED_SCRIPT, [this.#runKeys(named).state], [reason.slice(0, 300)])) === 1
    if (counted) return
    const ids = await this.#command(() => this.#client.zRange(this.#runsKey, 0, -1))
    await Promise.all(ids.map((id) => this.#eval(REFUSED_SCRIPT, [this.#runKeys(id).state], [reason.slice(0, 300)])))
  }

  /** Whether Redis holds state for `run`. */
  async hasRun(run: string): Promise<boolean> {
    return (await this.#command(() => this.#client.exists(this.#runKeys(run).state))) === 1
  }

  /** Ids of the runs in the store (oldest first), without the expired ones. */
  async runIds(): Promise<string[]> {
    return (await this.runs()).map((run) => run.id)
  }

  /** The runs in the store (oldest first) with their itemized call counts, without the expired ones. */
  async runs(): Promise<Array<{ id: string; calls: number }>> {
    const ids = await this.#command(() => this.#client.zRange(this.#runsKey, 0, -1))
    // Issued in one tick: node-redis sends them in one write.
    const counts = await this.#command(() => Promise.all(ids.map((id) => this.#client.hGet(this.#runKeys(id).state, 'calls'))))
    const live: Array<{ id: string; calls: number }> = []
    const expired: string[] = []
    ids.forEach((id, i) => {
      const calls = counts[i]
      if (calls !== null && calls !== undefined) live.push({ id, calls: Math.min(Number(calls), ITEMIZED_CALLS_LIMIT) })
      else expired.push(id)
    })
    // The index has no TTL of its own: runs whose keys expired leave it when listed.
    if (expired.length) await this.#command(() => this.#client.zRem(this.#runsKey, expired))
    return live
  }

  /** The merged report of a run: every replica's calls and effects, the shared coverage and counters. */
  async report(runId: string = DEFAULT_RUN): Promise<Report> {
    return (await this.#readRun(runId)).report
  }

  /** The merged report and where its streams end (the dashboard's feed reads on from there). */
  async #readRun(runId: string): Promise<{ report: Report; cursor: FeedCursor; exists: boolean }> {
    const keys = this.#runKeys(runId)
    // Running calls first: one that finishes meanwhile is then in both (the finished copy wins), never in neither.
    const [running, state, callEntries, effectEntries, rules] = await this.#command(() =>
      Promise.all([this.#client.hVals(keys.running), this.#client.hGetAll(keys.state), this.#client.xRange(keys.calls, '-', '+'), this.#client.xRange(keys.effects, '-', '+'), this.#client.hGetAll(keys.rules)]),
    )
    // The report shows the rules deciding the run, and their coverage, though another replica set them.
    this.#adoptRunRules(runId, rules)
    const claims = await this.#claims.read(keys.claims)
    const counter = (field: string) => Number(state[field] ?? 0)
    const coverage = this.#coverageOf(runId, counter)
    const calls = (callEntries ?? []).map((entry) => JSON.parse(entry.message.c as string) as CallRecord)
    const finished = new Set(calls.map((call) => call.id))
    for (const text of running ?? []) {
      const call = this.#runningCall(runId, text)
      if (!finished.has(call.id)) calls.push(call)
    }
    calls.sort((a, b) => a.id - b.id)
    const effects = (effectEntries ?? []).map((entry) => JSON.parse(entry.message.e as string) as EffectRecord)
    const cursor = { calls: callEntries?.at(-1)?.id ?? '-', effects: effectEntries?.at(-1)?.id ?? '-', start: state.start ?? null }
    const report = this.#storm.reportOf({
      id: runId,
      coverage,
      calls,
      effects,
      droppedCalls: Math.max(0, counter('calls') - ITEMIZED_CALLS_LIMIT),
      budgetRejections: counter('budget'),
      claims,
      refusedEffects: state.refused ? { count: counter('refused'), first: state.refusedFirst ?? '' } : null,
    } satisfies Pick<Run, 'id' | 'coverage' | 'calls' | 'droppedCalls' | 'effects' | 'budgetRejections' | 'claims' | 'refusedEffects'>)
    const missed = counter('unavailable') + (this.#unavailable.get(runId) ?? 0)
    return { report: missed > 0 ? { ...report, stateUnavailable: missed } : report, cursor, exists: state.start !== undefined }
  }

  /**
   * Keep a claim (already redacted) in the run's shared list, so every replica's report judges
   * it: it speaks for the run's calls so far, counted across replicas (docs/claims.md).
   */
  async addClaim(claim: NewClaim): Promise<{ run: string; claim: StoredClaim }> {
    // Any replica may have served the run: a named run is taken as named.
    const runId = claim.run ?? this.#storm.activeRun ?? DEFAULT_RUN
    const keys = this.#runKeys(runId)
    const [calls, start] = await this.#command(() => this.#client.hmGet(keys.state, ['calls', 'start']))
    const startMs = Number(start ?? NaN)
    const at = Number.isFinite(startMs) ? roundSeconds(Math.max(0, Date.now() - startMs) / 1000) : 0
    const { tool, toolCallId, status, source, traceId, spanId } = claim
    const stored = await this.#claims.add(keys.claims, { tool, toolCallId, status, source, traceId, spanId, at, upTo: Number(calls ?? 0), after: 0 })
    if (!stored) throw new ClaimError('ERR_CLAIM_LIMIT', `Failed to record a claim: run "${runId}" already holds 10,000 claims.`)
    return { run: runId, claim: stored }
  }

  /** A call another replica (or this one) is still serving, as one process lists it. */
  #runningCall(run: string, text: string): CallRecord {
    const [id, route, ordinal, key, parent, startedMs, method, url, ruleName] = JSON.parse(text) as [number, string, number, string, number, number, string, string, string]
    const rule = ruleName ? (this.#storm.configOf(run).rules.find((candidate) => candidate.name === ruleName) ?? null) : null
    return this.#storm.runningRecord(id, route, ordinal, key, parent || null, method, url, startedMs / 1000, rule)
  }

  /** The shared coverage of the rules deciding `run` (its own, else the proxies'). */
  #coverageOf(run: string, counter: (field: string) => number): Map<string, CoverageCounts> {
    const coverage = new Map<string, CoverageCounts>()
    for (const rule of this.#storm.configOf(run).rules) coverage.set(rule.name, { eligible: counter(`c:${rule.name}:e`), selected: counter(`c:${rule.name}:s`), triggered: counter(`c:${rule.name}:t`) })
    return coverage
  }

  // The dashboard's feed (docs/dashboard.md: with --state, every replica's exchanges) ----------

  /** Everything the dashboard shows of a run, from every replica, and the cursor to follow it from. */
  async feedSnapshot(runId: string): Promise<FeedSnapshot> {
    const [{ report, cursor, exists }, runs] = await Promise.all([this.#readRun(runId), this.runs()])
    return { exists, report, runs, cursor }
  }

  /**
   * What changed in a run since `cursor`, in one round trip: calls finished and effects reported
   * on any replica, the shared coverage and counters. `reset`: the run was reset (or expired)
   * since, so the follower needs a fresh snapshot.
   */
  async feedChanges(runId: string, cursor: FeedCursor): Promise<FeedChanges> {
    const keys = this.#runKeys(runId)
    const after = (id: string) => (id === '-' ? '-' : `(${id}`)
    const [state, callEntries, effectEntries, runCount, running, rules] = await this.#command(() =>
      Promise.all([
        this.#client.hGetAll(keys.state),
        this.#client.xRange(keys.calls, after(cursor.calls), '+', { COUNT: FEED_BATCH }),
        this.#client.xRange(keys.effects, after(cursor.effects), '+', { COUNT: FEED_BATCH }),
        this.#client.zCard(this.#runsKey),
        this.#client.hVals(keys.running),
        this.#client.hGetAll(keys.rules),
      ]),
    )
    this.#adoptRunRules(runId, rules)
    const counter = (field: string) => Number(state[field] ?? 0)
    const next = { calls: callEntries?.at(-1)?.id ?? cursor.calls, effects: effectEntries?.at(-1)?.id ?? cursor.effects, start: state.start ?? null }
    return {
      reset: next.start !== cursor.start,
      cursor: next,
      calls: (callEntries ?? []).map((entry) => JSON.parse(entry.message.c as string) as CallRecord),
      running: (running ?? []).map((text) => this.#runningCall(runId, text)),
      effects: (effectEntries ?? []).map((entry) => JSON.parse(entry.message.e as string) as EffectRecord),
      coverage: Object.fromEntries(this.#coverageOf(runId, counter)),
      stats: { calls: counter('calls'), droppedCalls: Math.max(0, counter('calls') - ITEMIZED_CALLS_LIMIT), budgetRejections: counter('budget') },
      runCount: Number(runCount),
      more: (callEntries?.length ?? 0) >= FEED_BATCH || (effectEntries?.length ?? 0) >= FEED_BATCH,
    }
  }

  // Recording (docs/scale-out.md#recording-across-replicas) ---------------------------------

  /**
   * Append a recorded exchange of `run` to the run's cassette stream, with the cassette `header`
   * the first time this replica records the run. Not waited for by the exchange; a line Redis
   * could not take is counted in the run's `stateUnavailable`.
   */
  async appendCassette(run: string, line: string, header: string | null): Promise<void> {
    const keys = this.#runKeys(run)
    try {
      const stored = await this.#eval(CASSETTE_SCRIPT, [keys.state, keys.cassette], [this.#ttlMs, String(ITEMIZED_CALLS_LIMIT), this.#maxRunBytes, header ?? '', line])
      if (stored === 0) this.#cassetteRefused++
    } catch {
      this.#countUnavailable(run)
    }
  }

  /** True for the one replica that claims `name` first (SET NX, living as long as a run's keys): one incident per run between replicas. */
  async claimOnce(name: string): Promise<boolean> {
    return (await this.#command(() => this.#client.set(`${this.#prefix}:once:${name}`, '1', { NX: true, PX: Number(this.#ttlMs) }))) === 'OK'
  }

  /** Lines this replica recorded that the run's bounds refused (they are counted in Redis too). */
  get cassetteRefused(): number {
    return this.#cassetteRefused
  }

  /**
   * The cassette of `runs` (every run in the store when null) as every replica recorded it: the
   * exchanges in call order (the order Redis began them), numbered again, each with the effects
   * any replica received for its call. `header` is null when no replica recorded these runs.
   */
  async assembleCassette(runs: readonly string[] | null): Promise<{ header: CassetteHeader | null; exchanges: CassetteExchange[]; dropped: number }> {
    const ids = runs ?? (await this.runIds())
    const read = await this.#command(
      () =>
        Promise.all(ids.map((id) => {
          const keys = this.#runKeys(id)
          return Promise.all([this.#client.hmGet(keys.state, ['start', 'cassette', 'cassetteDropped']), this.#client.xRange(keys.cassette, '-', '+'), this.#client.xRange(keys.effects, '-', '+')])
        })),
      { deadlineMs: BULK_READ_TIMEOUT_MS },
    )
    let header: { start: number; header: CassetteHeader } | null = null
    let dropped = 0
    const sorted: Array<{ at: number; call: number; exchange: CassetteExchange }> = []
    const recorded: string[] = []
    for (const [index, [[start, text, refused], lines, effectEntries]] of read.entries()) {
      if (typeof text !== 'string') continue
      recorded.push(ids[index] as string)
      const startMs = Number(start ?? 0)
      if (header === null || startMs < header.start) header = { start: startMs, header: JSON.parse(text) as CassetteHeader }
      dropped += Number(refused ?? 0)
      const effects = new Map<number, CassetteExchange['effects']>()
      for (const entry of effectEntries ?? []) {
        const { name, key, call, at, identity, redacted } = JSON.parse(entry.message.e as string) as EffectRecord
        effects.set(call, [...(effects.get(call) ?? []), { name, key, at, identity, redacted }])
      }
      for (const entry of lines ?? []) {
        const exchange = JSON.parse(entry.message.x as string) as CassetteExchange
        // Effects come from the run's stream: one reported to another replica belongs here too.
        if (exchange.call !== null) exchange.effects = effects.get(exchange.call) ?? []
        // Calls share Redis's clock and number: (start, call) is the order Redis began them in.
        sorted.push({ at: startMs + exchange.started * 1000, call: exchange.call ?? 0, exchange })
      }
    }
    sorted.sort((a, b) => a.at - b.at || a.call - b.call)
    return { header: header ? await this.#withClaims(header.header, recorded) : null, exchanges: sorted.map(({ exchange }, i) => ({ ...exchange, seq: i + 1 })), dropped }
  }

  /**
   * The header with the recorded runs' claims judged now, from the store (the header kept in
   * Redis was made at the run's first exchange, before most claims came): docs/claims.md.
   */
  async #withClaims(header: CassetteHeader, runs: readonly string[]): Promise<CassetteHeader> {
    const { claims: _stale, ...rest } = header
    const claims: CassetteClaim[] = []
    for (const run of runs) {
      for (const claim of (await this.report(run)).claims ?? []) if (claims.length < MAX_CASSETTE_CLAIMS) claims.push({ run, ...claim })
    }
    return claims.length ? { ...rest, claims } : rest
  }

  /** Forget one run (or every run) in the store and in this replica. */
  async reset(run?: string): Promise<void> {
    const ids = run === undefined ? await this.#command(() => this.#client.zRange(this.#runsKey, 0, -1)) : [run]
    for (const id of ids) {
      const keys = this.#runKeys(id)
      await this.#command(() => this.#client.del([keys.state, keys.keys, keys.exchanges, keys.calls, keys.effects, keys.cassette, keys.running, keys.claims, keys.quota]))
      await this.#command(() => this.#client.zRem(this.#runsKey, id))
      this.#unavailable.delete(id)
    }
    this.#storm.reset(run)
  }

  async close(): Promise<void> {
    this.#rules.stop()
    const subscriber = this.#subscriber
    this.#subscriber = null
    await subscriber?.close().catch(() => subscriber.destroy())
    if (this.#client.isOpen) await this.#client.close().catch(() => this.#client.destroy())
  }

  // Plumbing -------------------------------------------------------------------------------

  /** EVALSHA, loading the script on first use and again after Redis restarted (NOSCRIPT). */
  async #eval(script: string, keys: string[], args: string[], onLate?: (reply: unknown) => void): Promise<unknown> {
    let sha = this.#shas.get(script)
    if (sha === undefined) {
      sha = createHash('sha1').update(script).digest('hex')
      this.#shas.set(script, sha)
    }
    const command = ['EVALSHA', sha, String(keys.length), ...keys, ...args]
    try {
      return await this.#command(() => this.#client.sendCommand(command), onLate ? { onLate } : {})
    } catch (error) {
      if (!(error instanceof ErrorReply) || !error.message.startsWith('NOSCRIPT')) throw error
      return this.#command(() => this.#client.sendCommand(['EVAL', script, String(keys.length), ...keys, ...args]), onLate ? { onLate } : {})
    }
  }

  /**
   * One round trip, within a deadline of our own: node-redis drops a command's `timeout` once the
   * command is written, so a connected Redis that stops answering would hold it for ever. Past the
   * deadline the store counts as unavailable until it answers again (`onLate` gets a reply that
   * comes anyway). Any failure but a Redis error reply means the store is unavailable.
   */
  async #command<T>(send: () => Promise<T>, options: { deadlineMs?: number; onLate?: (value: T) => void } = {}): Promise<T> {
    this.roundTrips++
    if (this.#silent) {
      this.#probe()
      throw unavailable(this.#where, new NoAnswerError(`no answer within ${COMMAND_TIMEOUT_MS / 1000} s`), 'during traffic')
    }
    const deadlineMs = options.deadlineMs ?? COMMAND_TIMEOUT_MS
    const sent = send()
    let timer: NodeJS.Timeout | undefined
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new NoAnswerError(`no answer within ${deadlineMs / 1000} s`)), deadlineMs)
      timer.unref()
    })
    try {
      return await Promise.race([sent, deadline])
    } catch (error) {
      if (error instanceof NoAnswerError) {
        this.#silent = true
        sent.then(
          (value) => {
            this.#silent = false
            options.onLate?.(value)
          },
          () => undefined,
        )
      } else if (error instanceof ErrorReply && !/^(LOADING|BUSY|MASTERDOWN|READONLY)/.test(error.message)) throw error
      throw unavailable(this.#where, error, 'during traffic')
    } finally {
      clearTimeout(timer)
    }
  }

  /** While the store is silent: one PING at a time; its answer (or a broken connection, which fails fast) ends the silence. */
  #probe(): void {
    if (this.#probing) return
    this.#probing = true
    void this.#client.ping().then(
      () => undefined,
      () => undefined,
    ).finally(() => {
      this.#probing = false
      this.#silent = false
    })
  }
}

function ruleArgs(rule: Rule, mode: 'a' | 'n' | 'd'): string[] {
  return [rule.name, String(rule.limit ?? -1), mode, rule.calls.join(',')]
}
