/**
 * One request/response exchange as the engine sees it: its call record, the rule selected for
 * it and the state transitions the transports drive.
 */
import type { Fault, QuotaVerdict } from './faults/fault.js'
import type { RequestView } from './http.js'
import type { ProtocolHooks } from './protocol-hooks.js'
import type { Run } from './run.js'
import type { CallRecord } from './schema/report.js'
import type { Rule } from './schema/rule.js'
import { roundSeconds, type Clock } from './clock.js'
import { channels } from './evidence/channels.js'

export type ExchangeOutcome = 'response' | 'reset' | 'error' | 'cancelled'

/** How an exchange ended for its client: the flow decides it, then finishes the exchange with it in one place (exchange-flow.ts). */
export type ExchangeEnding = { readonly outcome: 'response'; readonly status: number; readonly error?: string } | { readonly outcome: Exclude<ExchangeOutcome, 'response'>; readonly status: number | null; readonly error: string }

/** What the storm remembers of an exchange for late effect reports: small on purpose. */
export interface ExchangeEntry {
  readonly run: Run
  readonly record: CallRecord | null
  done: boolean
}

/** What an exchange starts from; a call refused by the call budget has no record, rule or fault. */
export interface ExchangeInit {
  /** The value of `x-toolstorm-call`. */
  readonly id: string
  /** The nonce of the storm that began the exchange. */
  readonly stormId: string
  readonly run: Run
  readonly request: RequestView
  readonly url: URL
  readonly record?: CallRecord | null
  readonly rule?: Rule | null
  readonly fault?: Fault | null
  /** The raw (unredacted) invocation key. */
  readonly rawKey?: string
  readonly seed: number
  readonly clock: Clock
  /** Called once the exchange ended, after its record is final (a shared state store writes it out). */
  readonly onFinish?: ((exchange: Exchange) => void) | undefined
  /** A shared state store's verdict on a `token_limit` call, taken when it began. */
  readonly quota?: QuotaVerdict | undefined
  /** What the flow and the fault ask of the protocol (its storm's plug-ins'). Default: nothing known. */
  readonly protocol?: ProtocolHooks | undefined
}

export class Exchange {
  /** The value of `x-toolstorm-call`: how the tool side names this exchange in effect reports. */
  readonly id: string
  /** The nonce of the storm that began the exchange (`storm.effect()` matches it in the async context). */
  readonly stormId: string
  readonly run: Run
  readonly request: RequestView
  readonly url: URL
  /** Null when the call was refused by the call budget. */
  readonly record: CallRecord | null
  readonly rule: Rule | null
  /** The selected rule's fault, as it acts on this exchange (see `adaptFault`). */
  readonly fault: Fault | null
  /** The raw (unredacted) invocation key. */
  readonly rawKey: string
  readonly seed: number
  readonly clock: Clock
  readonly entry: ExchangeEntry
  /** A shared state store's verdict on a `token_limit` call (null: none, the fault counts in memory). */
  readonly quota: QuotaVerdict | null
  /** The plug-ins' answers to what the flow and the faults ask of the protocol (protocol-hooks.ts): its storm's. */
  readonly protocol: ProtocolHooks
  readonly #onFinish: ((exchange: Exchange) => void) | undefined
  #ended = false

  constructor(init: ExchangeInit) {
    this.id = init.id
    this.stormId = init.stormId
    this.run = init.run
    this.request = init.request
    this.url = init.url
    this.record = init.record ?? null
    this.rule = init.rule ?? null
    this.fault = init.fault ?? null
    this.rawKey = init.rawKey ?? ''
    this.seed = init.seed
    this.clock = init.clock
    this.entry = { run: init.run, record: this.record, done: false }
    this.#onFinish = init.onFinish
    this.quota = init.quota ?? null
    this.protocol = init.protocol ?? {}
  }

  /**
   * Change how the selected fault acts, not whether it was selected: a transport whose answers
   * travel elsewhere (the legacy MCP transport's GET stream) points it at them.
   */
  adaptFault(fault: Fault): void {
    // A plain field, read on every exchange: no getter on the hot path.
    ;(this as { fault: Fault | null }).fault = fault
  }

  /** Serve it with other plug-ins' hooks than its storm's: a transport given plug-ins of its own (deprecated, engine/serve.ts). */
  adaptProtocol(protocol: ProtocolHooks): void {
    ;(this as { protocol: ProtocolHooks }).protocol = protocol
  }

  get refused(): boolean {
    return this.record === null
  }

  get finished(): boolean {
    return this.entry.done
  }

  /** Seconds since the run started. */
  elapsedSinceStart(): number {
    return this.clock.now() - this.run.start
  }

  markExecuted(): void {
    if (this.record) this.record.executed = true
  }

  markUpstreamStatus(status: number): void {
    if (this.record) this.record.upstreamStatus = status
  }

  /** Record that the selected fault really happened. */
  markInjected(retryAfter?: number): void {
    const record = this.record
    if (!record || record.injected || !this.rule) return
    record.injected = true
    if (retryAfter !== undefined) record.retryAfter = retryAfter
    const counts = this.run.coverage.get(this.rule.name)
    if (counts) counts.triggered++
    if (channels.faultApplied.hasSubscribers) channels.faultApplied.publish({ run: this.run.id, exchangeId: this.id, call: record })
  }

  /** Note an advertised retry delay from the real upstream (a 429 or 5xx with Retry-After). */
  noteRetryAfter(seconds: number): void {
    if (this.record && this.record.retryAfter === null) this.record.retryAfter = seconds
  }

  /**
   * Record how the exchange ended for the client, before it is finished: the flow still reads the
   * upstream (a cut model stream's usage). The first ending is kept; `finish` then closes it.
   */
  end(outcome: ExchangeOutcome, status: number | null, error: string | null = null): void {
    const record = this.record
    if (this.entry.done || this.#ended || !record) return
    this.#ended = true
    record.outcome = outcome
    record.status = status
    record.error = error
    record.elapsed = Math.max(0, roundSeconds(this.elapsedSinceStart() - record.started))
  }

  /** `end` with an ending the flow decided, recorded the moment the client sees it; returns it for the flow to finish with. */
  ended<E extends ExchangeEnding>(ending: E): E {
    this.end(ending.outcome, ending.status, ending.error)
    return ending
  }

  /** End the exchange and close it. Later calls are ignored: the first ending is what the client saw. */
  finish(outcome: ExchangeOutcome, status: number | null, error: string | null = null): void {
    if (this.entry.done) return
    this.end(outcome, status, error)
    this.entry.done = true
    const record = this.record
    if (!record) return
    if (channels.exchangeEnd.hasSubscribers) channels.exchangeEnd.publish({ run: this.run.id, exchangeId: this.id, call: record })
    this.#onFinish?.(this)
  }
}
