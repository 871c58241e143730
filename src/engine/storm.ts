/**
 * The storm, the composition root of a run: its config (rules, seed, routes), the per-run rules,
 * its redactor, clock and plug-ins (and so the fault kinds its rules may use, and what every
 * exchange asks of a protocol: `protocol`), held by its decider (call-decider.ts), and its runs
 * kept in a ledger given that decider alone. Every transport serves it with its own plug-ins
 * (serve.ts), calling `begin()` for every request.
 *
 * @example
 * const storm = createStorm({ seed: 42, rules: [{ name: 'lost-ack', route: 'POST /ship', kind: 'response_lost', calls: [1] }] })
 */
import { EffectError } from '../errors.js'
import { RealClock, type Clock } from './clock.js'
import { CallDecider, kernelFaults, parseConfig } from './call-decider.js'
import { type HeaderMap, HEADER_CALL } from './http.js'
import { checkEffectInput, type BeginRequest } from './ledger/run-ledger.js'
import { MemoryLedger } from './ledger/memory-ledger.js'
import { exchangeContext } from './exchange-context.js'
import type { Exchange } from './exchange.js'
import { FaultRegistry } from './faults/fault-registry.js'
import { KERNEL_FAULTS } from './faults/kernel-faults.js'
import type { ExchangePlugin } from './plugin.js'
import { protocolHooksOf, type ProtocolHooks } from './protocol-hooks.js'
import type { Redactor } from '../redact/index.js'
import { DEFAULT_RUN, type Run } from './run.js'
import { callsSettled } from './streams/read-on.js'
import type { StormConfig, StormConfigInput } from './schema/config.js'
import type { EffectRecord, Report } from './schema/report.js'
import type { Rule } from './schema/rule.js'
import { type ClaimsJudge, unjudgedClaims } from './evidence/claims-judge.js'

export { DEFAULT_RUN } from './run.js'
export type { BeginRequest } from './ledger/run-ledger.js'
export { parseConfig } from './call-decider.js'

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

/** Create a storm from a config object (validated against the kinds of its faults, or of its plug-ins). */
export function createStorm(config: StormConfigInput | StormConfig = {}, options: KernelStormOptions = {}): Storm {
  const faults = options.faults ?? faultRegistryOf(options.plugins ?? [])
  return new Storm(parseConfig(config, options.source, faults), { ...options, faults })
}

/** The kernel's kinds and those `plugins` bring: what a storm made with them may use. */
export function faultRegistryOf(plugins: readonly ExchangePlugin[]): FaultRegistry {
  return plugins.some((plugin) => plugin.faults?.length) ? new FaultRegistry([...KERNEL_FAULTS, ...plugins.flatMap((plugin) => plugin.faults ?? [])]) : kernelFaults
}

export class Storm {
  readonly clock: Clock
  /** What every exchange of this storm goes through, whichever transport serves it (serve.ts). */
  readonly plugins: readonly ExchangePlugin[]
  /** What the flow and the faults ask of a protocol: the plug-ins' answers, gathered once (protocol-hooks.ts). */
  readonly protocol: ProtocolHooks
  /** The fault kinds this storm's rules may use (PUT /rules and the dashboard's editor parse against them). */
  readonly faults: FaultRegistry
  /** What decides the calls (config, runs' own rules, redaction): what a run ledger is given, never the storm itself. */
  readonly decider: CallDecider
  /** Where the runs are kept: the storm decides, the ledger stores (ledger/memory-ledger.ts). */
  readonly ledger: MemoryLedger
  /** Distinguishes this storm's exchange ids from another process's. */
  readonly nonce: string

  constructor(config: StormConfig, options: KernelStormOptions = {}) {
    this.plugins = options.plugins ?? []
    this.protocol = protocolHooksOf(this.plugins)
    this.faults = options.faults ?? faultRegistryOf(this.plugins)
    // A config parsed against other faults fails here, not at its first call.
    for (const rule of config.rules) this.faults.faultFor(rule.kind)
    this.clock = options.clock ?? new RealClock()
    this.decider = new CallDecider(config, this.clock, this.faults, this.protocol, options.judgeClaims ?? unjudgedClaims)
    this.ledger = new MemoryLedger(this.decider)
    this.nonce = this.decider.nonce
  }

  get config(): StormConfig {
    return this.decider.config
  }

  get rules(): readonly Rule[] {
    return this.decider.config.rules
  }

  get redactor(): Redactor {
    return this.decider.redactor
  }

  /** Replace the rules (and routes, seed, limits) live. In-flight exchanges keep the rule they selected. Runs with rules of their own keep them. */
  setConfig(config: StormConfig): void {
    this.decider.setConfig(config)
    this.ledger.syncRules()
  }

  /**
   * Give one run rules of its own (seed, rules, routes, call budget), or take them back (`null`):
   * its calls are then decided by them, and its report shows them. Redaction and MCP detection stay
   * the storm's. A run's rules outlive `reset()`, as the storm's do.
   */
  setRunConfig(id: string, config: StormConfig | null): void {
    this.decider.setRunConfig(id, config)
    this.ledger.syncRules(id)
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

  /** Start an exchange in memory: budget, route, ordinal, key and rule selection, under one synchronous step. */
  begin(request: BeginRequest): Exchange {
    return this.ledger.begin(request)
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
    return this.ledger.recordEffect(name, key, callId)
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

  /** Once no call of the run (of any run, unnamed) is still read on after a cut (streams/read-on.ts): its tokens are then final. */
  settled(id?: string): Promise<void> {
    return callsSettled((id === undefined ? [...this.ledger.all()] : [this.ledger.find(id)]).flatMap((run) => run?.calls ?? []))
  }

  /** A detached snapshot of one run as a versioned report. */
  report(id: string = DEFAULT_RUN): Report {
    return this.ledger.reportNow(id)
  }

  /** A run's claims judged as its report would hold them; undefined when it has none (the dashboard's feed sends them as they change). */
  claimsOf(id: string): Report['claims'] {
    return this.ledger.claimsOf(id)
  }
}
