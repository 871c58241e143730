/**
 * What decides a storm's calls, and keeps none of its runs: the config, runs' own rules, the
 * active run, the redactor and the plug-ins' faults and hooks, with the pure helpers over them
 * (a call's plan, its record and exchange, a run's report). The storm owns it; a run ledger (memory
 * here, Redis in src/state) is given it and stores what it decides: one `begin` whichever store
 * counts (`plan`, then the store's ordinal, key and rule, then `openExchange`), never a call back
 * into the storm.
 */
import { randomBytes } from 'node:crypto'
import { ConfigError } from '../errors.js'
import { docsUrl } from '../docs-url.js'
import { createRedactor, type Redactor } from '../redact/index.js'
import { VERSION } from '../version.js'
import type { Clock } from './clock.js'
import { channels } from './evidence/channels.js'
import type { ClaimsJudge } from './evidence/claims-judge.js'
import { parseTraceparent } from './evidence/traceparent.js'
import { Exchange } from './exchange.js'
import { FaultRegistry } from './faults/fault-registry.js'
import type { QuotaVerdict } from './faults/fault.js'
import { KERNEL_FAULTS } from './faults/kernel-faults.js'
import { HEADER_CALL, HEADER_KEY, HEADER_RUN, headerValue, type RequestView } from './http.js'
import type { BeginRequest } from './ledger/run-ledger.js'
import type { ProtocolHooks } from './protocol-hooks.js'
import { recoveryOf } from './recovery.js'
import type { RequestReading } from './request-reading.js'
import { pathName, RouteTable } from './routes.js'
import { DEFAULT_RUN, type Run } from './run.js'
import type { RunClaims } from './run-claims.js'
import type { StormConfig } from './schema/config.js'
import { formatIssues } from './schema/format-issues.js'
import { type CallRecord, type Report, REPORT_KIND } from './schema/report.js'
import type { Rule } from './schema/rule.js'

/** Runs with rules of their own kept at most, as runs are (the ledger keeps 1,000). */
const MAX_RUNS = 1000
const REDACTED_URL_CACHE = 4096
/** An absolute URL's path, as text (`new URL` would percent-encode a `[REDACTED]` in it). */
const URL_PATH = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/?#]*([^?#]*)/

/** The kernel's own faults, for storms made without a registry (the engine's tests, a bare kernel). */
export const kernelFaults = new FaultRegistry(KERNEL_FAULTS)

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

/** What a call's begin decides before its run's counters, the same in memory and in a shared store. */
export interface CallPlan {
  readonly run: string
  readonly id: string
  /** The call's number in this decider (in its id): where a ledger keeps its exchange (MemoryLedger's ring). */
  readonly seq: number
  readonly view: RequestView
  readonly url: URL
  /** The config deciding the call: its run's own rules, else the storm's. */
  readonly config: StormConfig
  readonly route: string
  /** The request's `METHOD /path` when a declared route named it (rule globs match it too), else null. */
  readonly path: string | null
  /** The key the client sent (`x-toolstorm-key`), if any. */
  readonly key: string | undefined
  /** The exchange id of the call this one was made under (`x-toolstorm-call`), if any. */
  readonly parent: string | undefined
  readonly reading: RequestReading | undefined
}

export class CallDecider {
  #config: StormConfig
  #routes: RouteTable
  #redactor: Redactor
  /** Runs with rules of their own (`PUT /rules?run=ID`), their route tables built once: they decide that run's calls instead of the storm's. */
  readonly #runRules = new Map<string, { readonly config: StormConfig; readonly routes: RouteTable }>()
  /** Where requests that name no run go (`PUT /active-run`): the test running now, when tests run one at a time. */
  activeRun: string | null = null
  /** Redacted URLs by raw URL: agents call the same endpoints over and over. */
  readonly #redactedUrls = new Map<string, string>()
  #seq = 0
  /** Distinguishes this storm's exchange ids from another process's. */
  readonly nonce = randomBytes(4).toString('hex')

  constructor(
    config: StormConfig,
    readonly clock: Clock,
    readonly faults: FaultRegistry,
    readonly protocol: ProtocolHooks,
    readonly judgeClaims: ClaimsJudge,
  ) {
    this.#config = config
    this.#routes = new RouteTable(config.routes)
    this.#redactor = createRedactor(config.redact)
  }

  get config(): StormConfig {
    return this.#config
  }

  get redactor(): Redactor {
    return this.#redactor
  }

  /** Replace the storm's config (rules, routes, seed, limits, redaction). Runs with rules of their own keep them. */
  setConfig(config: StormConfig): void {
    this.#config = config
    this.#routes = new RouteTable(config.routes)
    this.#redactor = createRedactor(config.redact)
    this.#redactedUrls.clear()
  }

  /** Give one run rules of its own, or take them back (`null`). */
  setRunConfig(id: string, config: StormConfig | null): void {
    if (config === null) this.#runRules.delete(id)
    else {
      // Bounded as runs are: the oldest run's rules go first.
      if (!this.#runRules.has(id) && this.#runRules.size >= MAX_RUNS) this.#runRules.delete(this.#runRules.keys().next().value as string)
      this.#runRules.set(id, { config, routes: new RouteTable(config.routes) })
    }
  }

  /** The config that decides a run's calls: its own rules (`setRunConfig`), else the storm's. */
  configOf(id: string): StormConfig {
    return this.#runRules.get(id)?.config ?? this.#config
  }

  /** Whether the run has rules of its own. */
  hasRunConfig(id: string): boolean {
    return this.#runRules.has(id)
  }

  /** The route name for a request: the one a plug-in `named` it by (MCP: `tools/call create_shipment`); else by the routes of `run`'s rules. */
  routeOf(method: string, url: URL, named?: string | undefined, run?: string): string {
    if (named !== undefined) return named
    // Named after its path, the route holds no credential a path segment carries (a webhook's secret): its path is the call's redacted URL's.
    return (run === undefined ? this.#routes : (this.#runRules.get(run)?.routes ?? this.#routes)).resolve(method, url, this.#redactedPathName)
  }

  /**
   * The one claim router (docs/claims.md): the run a claim names when `known` (a mistyped id cannot
   * hide claims in a run nobody reports; a run with rules of its own, or active, is known), else the
   * run its trace went to, else the run requests that name none go to.
   */
  claimRun(named: string | undefined, known: (id: string) => boolean, traceRun: string | undefined): string {
    return (named !== undefined && (known(named) || this.#runRules.has(named) || this.activeRun === named) ? named : undefined) ?? traceRun ?? this.activeRun ?? DEFAULT_RUN
  }

  /** A call's run, id, view, config and route, decided before any store counts it. */
  plan(request: BeginRequest): CallPlan {
    // The run: the one given, else its `x-toolstorm-run`, else the active run, else `default`.
    const run = request.run ?? headerValue(request.headers, HEADER_RUN) ?? this.activeRun ?? DEFAULT_RUN
    const { url, reading } = request
    // The request as faults see it, with what the plug-in that named it added (a tool call: the `outputSchema` its tool declared).
    const seen = { method: request.method.toUpperCase(), url: url.href, headers: request.headers, outputSchema: reading?.outputSchema ?? null }
    // Object.assign, not a spread: V8 (Node 20) takes ~4 µs for this spread, 0.2 µs for the assign.
    const view: RequestView = reading === undefined ? seen : Object.assign({}, reading.details, seen, { route: reading.route })
    const route = this.routeOf(view.method, url, reading?.route, run)
    const config = this.configOf(run)
    // Only a declared route's name differs from the request's path; only rules ask for it.
    const path = config.rules.length > 0 && reading?.route === undefined && Object.hasOwn(config.routes, route) ? pathName(view.method, url) : null
    const key = headerValue(request.headers, HEADER_KEY) || undefined
    // Exchange ids: this storm's nonce, a sequence number and random bits.
    const seq = ++this.#seq
    const id = `${this.nonce}-${seq.toString(36)}-${unguessable()}`
    return { run, id, seq, view, url, config, route, path: path === route ? null : path, key, parent: headerValue(request.headers, HEADER_CALL), reading }
  }

  /** The sequence number in an exchange id this decider made (`<nonce>-<seq>-<random>`), else -1. */
  sequenceOf(id: string): number {
    const end = id.startsWith(`${this.nonce}-`) ? id.indexOf('-', this.nonce.length + 1) : -1
    const seq = end === -1 ? NaN : parseInt(id.slice(this.nonce.length + 1, end), 36)
    return Number.isSafeInteger(seq) && seq > 0 ? seq : -1
  }

  /** The exchange of a call its run's budget refused (counted by whoever keeps the run): no record, answered with the budget's refusal. */
  refusedExchange(run: Run, plan: Pick<CallPlan, 'id' | 'view' | 'url' | 'config'>): Exchange {
    return new Exchange({ id: plan.id, stormId: this.nonce, run, request: plan.view, url: plan.url, seed: plan.config.seed, clock: this.clock, protocol: this.protocol })
  }

  /**
   * The call record and exchange of a call its store counted: its ordinal, key and rule, its number
   * in the run, seconds since the run started and its parent call. Positional, as `runningRecord`:
   * it is on every exchange's path. `shared`: what a shared store adds (its write-out, a `token_limit` verdict).
   * `joined`: the record of the call this exchange is a further round of (`reading.joins`), running again.
   */
  openExchange(run: Run, plan: CallPlan, ordinal: number, key: string, rule: Rule | null, callId: number, started: number, parent: number | null, shared?: { readonly onFinish: (exchange: Exchange) => void; readonly quota: QuotaVerdict | undefined }, joined?: CallRecord): Exchange {
    const { id, view, url, route, reading } = plan
    const record = joined ? Object.assign(joined, { outcome: 'running', status: null, elapsed: null, error: null }) : this.runningRecord(callId, route, ordinal, key, parent, view.method, this.redactedUrl(view.url), started, rule)
    const evidence = joined ? reading?.joins?.evidence : reading?.evidence
    if (evidence) Object.assign(record, evidence)
    // A message's own trace context (MCP's) names the call's span; the header may name a span below it.
    const traceparent = reading?.traceparent ?? headerValue(view.headers, 'traceparent')
    const trace = traceparent === undefined ? null : parseTraceparent(traceparent)
    if (trace) record.trace = trace
    const fault = rule ? this.faults.faultFor(rule.kind) : null
    const exchange = new Exchange({ id, stormId: this.nonce, run, request: view, url, record, rule, fault, rawKey: key, seed: plan.config.seed, clock: this.clock, onFinish: shared?.onFinish, quota: shared?.quota, protocol: this.protocol })
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

  readonly #redactedPathName = (method: string, url: URL): string => `${method.toUpperCase()} ${URL_PATH.exec(this.redactedUrl(url.href))?.[1] || '/'}`

  /** A URL as reports show it (redacted; cached, as the same URLs come again and again). */
  redactedUrl(raw: string): string {
    let redacted = this.#redactedUrls.get(raw)
    if (redacted === undefined) {
      redacted = this.#redactor.url(raw)
      if (this.#redactedUrls.size >= REDACTED_URL_CACHE) this.#redactedUrls.clear()
      this.#redactedUrls.set(raw, redacted)
    }
    return redacted
  }

  /** A detached report of a run's state (a shared store passes the merged state) under the rules in force, and those its earlier calls began under; `committing`: the routes an effect was seen on. */
  reportOf(run: Pick<Run, 'id' | 'coverage' | 'calls' | 'droppedCalls' | 'effects' | 'budgetRejections'> & Partial<Pick<Run, 'earlierRules' | 'claims' | 'refusedEffects'>>, committing: ReadonlySet<string>): Report {
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
      ...(run.claims?.size ? { claims: this.judge(run.claims, run, committing) } : {}),
      ...(run.claims?.hasSpans ? { spans: run.claims.spanCounts() } : {}),
    }) as Report
  }

  /** A run's claims judged against its calls and effects (the judge the storm was given). */
  judge(claims: RunClaims, run: Pick<Run, 'id' | 'calls' | 'effects'>, committing: ReadonlySet<string>): Report['claims'] {
    return this.judgeClaims({ claims: claims.claims, spanParents: claims.spanParents, calls: run.calls, effects: run.effects, commits: { globs: this.configOf(run.id).commits, observed: committing } })
  }
}

/** A rule as reports and the admin API show it: its payloads redacted. */
export function redactRule(rule: Rule, redactor: Redactor): Rule {
  const copy: Record<string, unknown> = { ...rule }
  if (rule.replacement !== null) copy.replacement = redactor.json(rule.replacement)
  if (typeof copy.body === 'string') copy.body = redactor.text(copy.body)
  if (copy.headers && typeof copy.headers === 'object') copy.headers = redactor.headers(copy.headers as Record<string, string>)
  return copy as Rule
}
