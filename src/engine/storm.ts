/**
 * The storm, the composition root of a run: its config (rules, seed, routes), the per-run rules,
 * its redactor, clock and plug-ins (and so the fault kinds its rules may use, and what every
 * exchange asks of a protocol: `protocol`), its runs kept in a ledger. Every transport serves it
 * with its own plug-ins (serve.ts), calling `begin()` for every request.
 *
 * @example
 * const storm = createStorm({ seed: 42, rules: [{ name: 'lost-ack', route: 'POST /ship', kind: 'response_lost', calls: [1] }] })
 */
import { randomBytes } from 'node:crypto'
import { ConfigError, EffectError } from '../errors.js'
import { RealClock, roundSeconds, type Clock } from './clock.js'
import { recoveryOf } from './recovery.js'
import { channels } from './evidence/channels.js'
import { Exchange } from './exchange.js'
import { HEADER_CALL, HEADER_KEY, HEADER_RUN, type HeaderMap, headerValue, type RequestView } from './http.js'
import type { BeginRequest } from './ledger/run-ledger.js'
import type { RequestReading } from './request-reading.js'
import { MemoryLedger } from './ledger/memory-ledger.js'
import { exchangeContext } from './exchange-context.js'
import { FaultRegistry } from './faults/fault-registry.js'
import { KERNEL_FAULTS } from './faults/kernel-faults.js'
import type { ExchangePlugin } from './plugin.js'
import { protocolHooksOf, type ProtocolHooks } from './protocol-hooks.js'
import type { QuotaVerdict } from './faults/fault.js'
import { createRedactor, REDACTED, type Redactor } from '../redact/index.js'
import { pathName, RouteTable } from './routes.js'
import { Run } from './run.js'
import { callsSettled } from './streams/read-on.js'
import { selectRule } from './rules/select.js'
import { ITEMIZED_CALLS_LIMIT, type StormConfig, type StormConfigInput } from './schema/config.js'
import { formatIssues } from './schema/format-issues.js'
import { type CallRecord, type EffectRecord, type Report, REPORT_KIND } from './schema/report.js'
import type { Rule } from './schema/rule.js'
import { VERSION } from '../version.js'
import { docsUrl } from '../docs-url.js'
import { parseTraceparent } from './evidence/traceparent.js'
import { type ClaimsJudge, unjudgedClaims } from './evidence/claims-judge.js'
import type { RunClaims } from './run-claims.js'

export const DEFAULT_RUN = 'default'
/** Runs with rules of their own kept at most, as runs are (the ledger keeps 1,000). */
const MAX_RUNS = 1000
export const MAX_EFFECTS = 10_000
const REDACTED_URL_CACHE = 4096

export interface StormOptions {
  /** Defaults to real time. Use a `VirtualClock` for deterministic timings. */
  clock?: Clock
  /** Where the config came from, for error messages. */
  source?: string
  /**
   * What every exchange of this storm goes through, whichever transport serves it (plugin.ts), in
   * order. The kernel's default: none; `createStorm` from the package root: `defaultPlugins()`.
   */
  plugins?: readonly ExchangePlugin[]
  /** The fault kinds its rules may use. Default: the kernel's and those `plugins` bring. */
  faults?: FaultRegistry
}

/** A storm's options as the kernel takes them: what the package root's `createStorm` adds (src/create-storm.ts). */
export interface KernelStormOptions extends StormOptions {
  /**
   * Joins each run's claims to its calls and effects and gives their verdicts, each time a report is
   * made. Default: none (claims are reported `unverified`, joined to no call, docs/extending.md).
   */
  judgeClaims?: ClaimsJudge
}

/** The kernel's own faults, for storms made without a registry (the engine's tests, a bare kernel). */
export const kernelFaults = new FaultRegistry(KERNEL_FAULTS)

export type { BeginRequest } from './ledger/run-ledger.js'

/** Parse a config, throwing a `ConfigError` that names the source, the field and what was expected. */
export function parseConfig(input: unknown, source = 'config', faults: FaultRegistry = kernelFaults): StormConfig {
  const result = faults.configSchema.safeParse(input)
  if (!result.success) {
    const lines = formatIssues(result.error, input)
    throw new ConfigError(`Failed to load rules from ${source}: ${lines[0]}${lines.length > 1 ? ` (and ${lines.length - 1} more)` : ''}. See ${docsUrl('rules.md')}.`, {
      details: lines.join('\n'),
    })
  }
  return result.data as StormConfig
}

/** Create a storm from a config object (validated against the kinds of its faults, or of its plug-ins). */
export function createStorm(config: StormConfigInput | StormConfig = {}, options: KernelStormOptions = {}): Storm {
  const faults = options.faults ?? faultRegistryOf(options.plugins ?? [])
  return new Storm(parseConfig(config, options.source, faults), { ...options, faults })
}

/** The kernel's kinds and those `plugins` bring: what a storm made with them may use. */
export function faultRegistryOf(plugins: readonly ExchangePlugin[]): FaultRegistry {
  return plugins.some((plugin) => plugin.faults?.length) ? new FaultRegistry([...KERNEL_FAULTS, ...plugins.flatMap((plugin) => plugin.faults ?? [])]) : kernelFaults
}

// Exchange ids are capabilities: whoever saw a forwarded request may report effects for it, so
// the id carries random bits. Drawn from a pooled buffer to keep the per-request cost low.
let pool = randomBytes(0)
let poolOffset = 0
function unguessable(): string {
  if (poolOffset + 6 > pool.length) {
    pool = randomBytes(6 * 1024)
    poolOffset = 0
  }
  poolOffset += 6
  return pool.toString('base64url', poolOffset - 6, poolOffset)
}

/** A run's own rules, with their route table built once. */
interface RunRules {
  readonly config: StormConfig
  readonly routes: RouteTable
}

/** A call whose ordinal, key and rule are decided: what `openExchange` makes an exchange of. */
export interface DecidedCall {
  readonly id: string
  readonly view: RequestView
  readonly url: URL
  readonly route: string
  readonly ordinal: number
  readonly key: string
  readonly rule: Rule | null
  /** The call's number in its run. */
  readonly callId: number
  /** Seconds since the run started. */
  readonly started: number
  readonly parent: number | null
  readonly seed: number
  readonly onFinish?: ((exchange: Exchange) => void) | undefined
  /** The shared store's verdict on a `token_limit` call (`src/state/redis-token-quota.ts`). */
  readonly quota?: QuotaVerdict | undefined
  /** What the plug-in that named the request read of it: the call's evidence and trace context. */
  readonly reading?: RequestReading | undefined
  /** The record of the call this exchange is a further round of (`reading.joins`): running again. */
  readonly record?: CallRecord | undefined
}

export class Storm {
  readonly clock: Clock
  /** What every exchange of this storm goes through, whichever transport serves it (serve.ts). */
  readonly plugins: readonly ExchangePlugin[]
  /** What the flow and the faults ask of a protocol: the plug-ins' answers, gathered once (protocol-hooks.ts). */
  readonly protocol: ProtocolHooks
  /** The fault kinds this storm's rules may use (PUT /rules and the dashboard's editor parse against them). */
  readonly faults: FaultRegistry
  /** Distinguishes this storm's exchange ids from another process's. */
  readonly nonce: string
  #config: StormConfig
  #routes: RouteTable
  #redactor: Redactor
  /** Where the runs are kept: the storm decides, the ledger stores (ledger/memory-ledger.ts). */
  readonly ledger: MemoryLedger
  /** Runs with rules of their own (`PUT /rules?run=ID`): they decide that run's calls instead of the storm's. */
  readonly #runRules = new Map<string, RunRules>()
  /** Where requests that name no run go (`PUT /active-run`): the test running now, when tests run one at a time. */
  #activeRun: string | null = null
  /** Redacted URLs by raw URL: agents call the same endpoints over and over. */
  readonly #redactedUrls = new Map<string, string>()
  #seq = 0
  readonly #judgeClaims: ClaimsJudge

  constructor(config: StormConfig, options: KernelStormOptions = {}) {
    this.plugins = options.plugins ?? []
    this.protocol = protocolHooksOf(this.plugins)
    this.faults = options.faults ?? faultRegistryOf(this.plugins)
    this.#judgeClaims = options.judgeClaims ?? unjudgedClaims
    // A config parsed against other faults fails here, not at its first call.
    for (const rule of config.rules) this.faults.faultFor(rule.kind)
    this.clock = options.clock ?? new RealClock()
    this.nonce = randomBytes(4).toString('hex')
    this.#config = config
    this.#routes = new RouteTable(config.routes)
    this.#redactor = createRedactor(config.redact)
    this.ledger = new MemoryLedger({
      clock: this.clock,
      configOf: (id) => this.configOf(id),
      begin: (request) => this.begin(request),
      report: (id) => this.report(id),
      claimsOf: (id) => this.claimsOf(id),
      effect: (name, key, options) => this.effect(name, key, options),
      onForget: (id) => {
        if (channels.runReset.hasSubscribers) channels.runReset.publish({ run: id })
      },
      knowsRun: (id) => this.#runRules.has(id) || this.#activeRun === id,
      unnamedRun: () => this.#activeRun ?? DEFAULT_RUN,
    })
  }

  get config(): StormConfig {
    return this.#config
  }

  get seed(): number {
    return this.#config.seed
  }

  get rules(): readonly Rule[] {
    return this.#config.rules
  }

  get redactor(): Redactor {
    return this.#redactor
  }

  /** Replace the rules (and routes, seed, limits) live. In-flight exchanges keep the rule they selected. Runs with rules of their own keep them. */
  setConfig(config: StormConfig): void {
    this.#config = config
    this.#routes = new RouteTable(config.routes)
    this.#redactor = createRedactor(config.redact)
    this.#redactedUrls.clear()
    for (const run of this.ledger.all()) {
      if (this.#runRules.has(run.id)) continue
      run.syncRules(config.rules)
      if (channels.runReset.hasSubscribers) channels.runReset.publish({ run: run.id })
    }
  }

  /**
   * Give one run rules of its own (seed, rules, routes, call budget), or take them back (`null`):
   * its calls are then decided by them, and its report shows them. Redaction and MCP detection stay
   * the storm's. A run's rules outlive `reset()`, as the storm's do.
   */
  setRunConfig(id: string, config: StormConfig | null): void {
    if (config === null) this.#runRules.delete(id)
    else {
      // Bounded as runs are: the oldest run's rules go first.
      if (!this.#runRules.has(id) && this.#runRules.size >= MAX_RUNS) this.#runRules.delete(this.#runRules.keys().next().value as string)
      this.#runRules.set(id, { config, routes: new RouteTable(config.routes) })
    }
    const run = this.ledger.find(id)
    if (!run) return
    run.syncRules(this.configOf(id).rules)
    if (channels.runReset.hasSubscribers) channels.runReset.publish({ run: id })
  }

  /** The config that decides a run's calls: its own rules (`setRunConfig`), else the storm's. */
  configOf(id: string): StormConfig {
    return this.#runRules.get(id)?.config ?? this.#config
  }

  /** Whether the run has rules of its own. */
  hasRunConfig(id: string): boolean {
    return this.#runRules.has(id)
  }

  /** The run requests that name none go to (null: `default`). */
  get activeRun(): string | null {
    return this.#activeRun
  }

  set activeRun(id: string | null) {
    this.#activeRun = id
  }

  /** The run with this id, created on first use. */
  run(id: string = DEFAULT_RUN): Run {
    return this.ledger.run(id)
  }

  /** Ids of the runs seen so far. */
  runIds(): string[] {
    return this.ledger.ids()
  }

  /** Forget a run (or every run): ordinals, calls, effects and coverage start again. */
  reset(id?: string): void {
    this.ledger.forget(id)
  }

  /** The route name for a request: the one a plug-in `named` it by (MCP: `tools/call create_shipment`); else by the routes of `run`'s rules. */
  routeOf(method: string, url: URL, named?: string | undefined, run?: string): string {
    if (named !== undefined) return named
    return (run === undefined ? this.#routes : (this.#runRules.get(run)?.routes ?? this.#routes)).resolve(method, url)
  }

  /** A request's `METHOD /path` when a declared route named it (rule globs match it too), else null. */
  declaredPathOf(route: string, method: string, url: URL, named?: string | undefined): string | null {
    if (named !== undefined) return null
    const path = pathName(method, url)
    return path === route ? null : path
  }

  /** The request as faults see it, with what the plug-in that named it added (a tool call: the `outputSchema` its tool declared). */
  requestView(request: BeginRequest): RequestView {
    const reading = request.reading
    const view = { method: request.method.toUpperCase(), url: request.url.href, headers: request.headers, outputSchema: reading?.outputSchema ?? null }
    // Object.assign, not a spread: V8 (Node 20) takes ~4 µs for this spread, 0.2 µs for the assign.
    return reading === undefined ? view : Object.assign({}, reading.details, view, { route: reading.route })
  }

  /** The run a request belongs to: the one given, else its `x-toolstorm-run`, else the active run, else `default`. */
  runOf(request: BeginRequest): string {
    return request.run ?? headerValue(request.headers, HEADER_RUN) ?? this.#activeRun ?? DEFAULT_RUN
  }

  /** Start an exchange: budget, route, ordinal, key and rule selection, under one synchronous step. */
  begin(request: BeginRequest): Exchange {
    const runId = this.runOf(request)
    const run = this.run(runId)
    const id = this.newExchangeId()
    const view = this.requestView(request)
    const named = request.reading?.route
    const own = this.#runRules.get(runId)
    const config = own?.config ?? this.#config
    const seed = config.seed
    const joined = request.reading?.joins === undefined ? undefined : this.ledger.exchange(request.reading.joins.exchange)
    if (joined?.record && joined.run === run && joined.done) {
      // A further round of a call that ended: the same call, decided as it was (no new ordinal, draw or budget).
      const { record } = joined
      const rule = record.fault === null ? null : (config.rules.find((candidate) => candidate.name === record.fault) ?? null)
      const exchange = this.openExchange(run, { id, view, url: request.url, route: record.route, ordinal: record.ordinal, key: record.key, rule, callId: record.id, started: record.started, parent: record.parent, seed, reading: request.reading, record })
      this.ledger.remember(id, exchange.entry)
      return exchange
    }
    if (config.maxCalls !== null && run.callCount >= config.maxCalls) {
      run.budgetRejections++
      return this.refusedExchange(run, id, view, request.url, seed)
    }
    const route = this.routeOf(view.method, request.url, named, runId)
    const { ordinal, key } = run.reserve(route, headerValue(request.headers, HEADER_KEY) || undefined)
    const rule = config.rules.length ? selectRule(config.rules, run.coverage, seed, route, ordinal, key, this.declaredPathOf(route, view.method, request.url, named)) : null
    const parentId = headerValue(request.headers, HEADER_CALL)
    const parent = parentId ? this.ledger.exchange(parentId) : undefined
    const parentCall = parent && parent.run === run && parent.record && !parent.done ? parent.record.id : null
    const exchange = this.openExchange(run, { id, view, url: request.url, route, ordinal, key, rule, callId: run.callCount + 1, started: roundSeconds(this.clock.now() - run.start), parent: parentCall, seed, reading: request.reading })
    if (run.calls.length < ITEMIZED_CALLS_LIMIT) run.calls.push(exchange.record as CallRecord)
    else run.droppedCalls++
    this.ledger.remember(id, exchange.entry)
    return exchange
  }

  /** A fresh exchange id: this storm's nonce, a sequence number and random bits. */
  newExchangeId(): string {
    return `${this.nonce}-${(++this.#seq).toString(36)}-${unguessable()}`
  }

  /** The exchange of a call its run's budget refused (counted by whoever keeps the run): no record, answered with the budget's refusal. */
  refusedExchange(run: Run, id: string, view: RequestView, url: URL, seed: number): Exchange {
    return new Exchange({ id, stormId: this.nonce, run, request: view, url, seed, clock: this.clock, protocol: this.protocol })
  }

  /** The call record and exchange of a call whose ordinal, key and rule are decided (by `begin()`, or by a shared state store). */
  openExchange(run: Run, call: DecidedCall): Exchange {
    const { id, view, url, route, ordinal, key, rule, callId, started, parent, seed, onFinish, quota, reading } = call
    const record = call.record ? Object.assign(call.record, { outcome: 'running', status: null, elapsed: null, error: null }) : this.runningRecord(callId, route, ordinal, key, parent, view.method, this.#redactUrl(view.url), started, rule)
    const evidence = call.record ? reading?.joins?.evidence : reading?.evidence
    if (evidence) Object.assign(record, evidence)
    // A message's own trace context (MCP's) names the call's span; the header may name a span below it.
    const traceparent = reading?.traceparent ?? headerValue(view.headers, 'traceparent')
    if (traceparent !== undefined) {
      const trace = parseTraceparent(traceparent)
      if (trace) {
        record.trace = trace
        this.ledger.rememberTrace(trace.traceId, run.id)
      }
    }
    const fault = rule ? this.faults.faultFor(rule.kind) : null
    const exchange = new Exchange({ id, stormId: this.nonce, run, request: view, url, record, rule, fault, rawKey: key, seed, clock: this.clock, onFinish, quota, protocol: this.protocol })
    if (channels.exchangeStart.hasSubscribers) channels.exchangeStart.publish({ run: run.id, exchangeId: id, call: record })
    return exchange
  }

  /**
   * The record of a call that began and has not finished, its key redacted (`url` already is).
   * Also how the shared store lists another replica's calls still running. Positional: it is on
   * every exchange's path, and an options object would be one more allocation per request.
   */
  runningRecord(id: number, route: string, ordinal: number, key: string, parent: number | null, method: string, url: string, started: number, rule: Pick<Rule, 'name' | 'kind'> | null): CallRecord {
    return {
      id,
      route,
      ordinal,
      // Default keys (#<ordinal>) cannot hold a secret; only client-sent keys are scanned.
      key: key.charCodeAt(0) === 35 && /^#\d+$/.test(key) ? key : this.#redactor.text(key),
      parent,
      method,
      url,
      started,
      elapsed: null,
      outcome: 'running' as const,
      status: null,
      executed: false,
      upstreamStatus: null,
      fault: rule?.name ?? null,
      kind: rule?.kind ?? null,
      phase: rule ? this.faults.faultFor(rule.kind).phase : null,
      injected: false,
      retryAfter: null,
      error: null,
    }
  }

  /** A URL as reports show it (redacted; cached, as the same URLs come again and again). */
  redactedUrl(raw: string): string {
    return this.#redactUrl(raw)
  }

  #redactUrl(raw: string): string {
    let redacted = this.#redactedUrls.get(raw)
    if (redacted === undefined) {
      redacted = this.#redactor.url(raw)
      if (this.#redactedUrls.size >= REDACTED_URL_CACHE) this.#redactedUrls.clear()
      this.#redactedUrls.set(raw, redacted)
    }
    return redacted
  }

  /**
   * Record that the tool side committed the logical effect `(name, key)`.
   * Inside an in-process tool handler the exchange is found from the async context; otherwise
   * pass the `x-toolstorm-call` value the request carried (or the request's headers).
   * Identity is computed on the raw values; only redacted values are stored.
   */
  effect(name: string, key: string, options: { call?: string | HeaderMap | null } = {}): EffectRecord {
    checkEffectInput(name, key)
    const callId = this.#callIdFrom(options.call)
    if (!callId) {
      throw new EffectError(
        'ERR_EFFECT_INVALID',
        'Failed to record an effect: no exchange is active here. Call effect() inside a tool handler, or pass the request\'s x-toolstorm-call header as { call }.',
      )
    }
    const exchange = this.ledger.exchange(callId)
    if (!exchange || !exchange.record) {
      throw new EffectError('ERR_EFFECT_INVALID', `Failed to record an effect: no exchange "${callId.slice(0, 64)}" in this storm. Was the run reset, or did the request bypass toolstorm?`)
    }
    const run = exchange.run
    if (run.effects.length >= MAX_EFFECTS) throw new EffectError('ERR_EFFECT_LIMIT', `Failed to record an effect: the run already holds ${MAX_EFFECTS} effects.`)
    const safeName = this.#redactor.text(name)
    const safeKey = this.#redactor.text(key)
    const effect: EffectRecord = {
      name: safeName,
      key: safeKey,
      call: exchange.record.id,
      at: roundSeconds(this.clock.now() - run.start),
      identity: run.identityOf(name, key),
      redacted: safeName !== name || safeKey !== key,
    }
    this.ledger.addEffect(run, exchange.record.route, effect)
    if (channels.commitReported.hasSubscribers) channels.commitReported.publish({ run: run.id, exchangeId: callId, effect })
    return effect
  }

  #callIdFrom(call: string | HeaderMap | null | undefined): string | undefined {
    if (typeof call === 'string') return call
    if (call && typeof call === 'object') {
      const value = call[HEADER_CALL]
      return Array.isArray(value) ? value[0] : value
    }
    const active = exchangeContext.getStore()
    return active && active.stormId === this.nonce ? active.exchangeId : undefined
  }

  /**
   * The config as it may be shown (admin API, dashboard): rule payloads redacted as in reports,
   * and literal secrets replaced by `[REDACTED]` (their count stays visible).
   */
  shownConfig(): StormConfig {
    const config = this.#config
    return structuredClone({
      ...config,
      rules: config.rules.map((rule) => redactRule(rule, this.#redactor)),
      redact: { keys: [...config.redact.keys], secrets: config.redact.secrets.map(() => REDACTED) },
    })
  }

  /** Once no call of the run (of any run, unnamed) is still read on after a cut (streams/read-on.ts): its tokens are then final. */
  settled(id?: string): Promise<void> {
    return callsSettled((id === undefined ? [...this.ledger.all()] : [this.ledger.find(id)]).flatMap((run) => run?.calls ?? []))
  }

  /** A detached snapshot of one run as a versioned report. */
  report(id: string = DEFAULT_RUN): Report {
    return this.reportOf(this.ledger.find(id) ?? new Run(id, this.clock.now(), this.configOf(id).rules))
  }

  /** A detached report of a run's state under the rules in force, and those its earlier calls began under (a shared store passes the merged state). */
  reportOf(run: Pick<Run, 'id' | 'coverage' | 'calls' | 'droppedCalls' | 'effects' | 'budgetRejections'> & Partial<Pick<Run, 'earlierRules' | 'claims' | 'refusedEffects'>>): Report {
    const config = this.configOf(run.id)
    const recovery = recoveryOf(run.calls)
    const rules = config.rules.map((rule) => redactRule(rule, this.#redactor))
    const earlier = run.earlierRules?.length ? run.earlierRules.map((set) => ({ from: set.from, to: set.to, rules: set.rules.map((rule) => redactRule(rule, this.#redactor)) })) : null
    return structuredClone({
      version: 1 as const,
      kind: REPORT_KIND,
      toolstorm: VERSION,
      run: run.id,
      seed: config.seed,
      clock: this.clock.kind,
      maxCalls: config.maxCalls,
      routes: { ...config.routes },
      rules,
      ...(earlier ? { earlierRules: earlier } : {}),
      coverage: Object.fromEntries(run.coverage),
      calls: run.calls,
      droppedCalls: run.droppedCalls,
      effects: run.effects,
      budgetRejections: run.budgetRejections,
      ...(run.refusedEffects ? { refusedEffects: run.refusedEffects } : {}),
      ...(recovery.length ? { recovery } : {}),
      ...(run.claims?.size ? { claims: this.#judge(run.claims, run, config) } : {}),
      ...(run.claims?.hasSpans ? { spans: run.claims.spanCounts() } : {}),
    }) as Report
  }

  /** A run's claims judged as its report would hold them; undefined when it has none (the dashboard's feed sends them as they change). */
  claimsOf(id: string): Report['claims'] {
    const run = this.ledger.find(id)
    if (!run?.claims.size) return undefined
    return structuredClone(this.#judge(run.claims, run, this.configOf(id)))
  }

  #judge(claims: RunClaims, run: Pick<Run, 'calls' | 'effects'>, config: StormConfig): Report['claims'] {
    return this.#judgeClaims({ claims: claims.claims, spanParents: claims.spanParents, calls: run.calls, effects: run.effects, commits: { globs: config.commits, observed: this.ledger.committingRoutes } })
  }
}

/** Throws `ERR_EFFECT_INVALID` unless `name` and `key` are strings of 1–200 characters. */
export function checkEffectInput(name: unknown, key: unknown): asserts name is string {
  if (typeof name !== 'string' || typeof key !== 'string' || name.length < 1 || name.length > 200 || key.length < 1 || key.length > 200) {
    throw new EffectError('ERR_EFFECT_INVALID', 'Failed to record an effect: name and key must be strings of 1–200 characters.')
  }
}

function redactRule(rule: Rule, redactor: Redactor): Rule {
  const copy: Record<string, unknown> = { ...rule }
  if (rule.replacement !== null) copy.replacement = redactor.json(rule.replacement)
  if (typeof copy.body === 'string') copy.body = redactor.text(copy.body)
  if (copy.headers && typeof copy.headers === 'object') copy.headers = redactor.headers(copy.headers as Record<string, string>)
  return copy as Rule
}
