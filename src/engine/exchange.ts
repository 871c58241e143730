/**
 * One request/response exchange as the engine sees it: its call record, the rule selected for
 * it and the state transitions the transports drive.
 */
import type { Fault, FaultPhase, RequestView } from './faults/fault.js'
import type { Run } from './run.js'
import type { CallRecord } from './schema/report.js'
import type { Rule } from './schema/rule.js'
import { roundSeconds, type Clock } from './clock.js'
import { channels } from './evidence/channels.js'

export type ExchangeOutcome = 'response' | 'reset' | 'error' | 'cancelled'

export class Exchange {
  /** The value of `x-toolstorm-call`: how the tool side names this exchange in effect reports. */
  readonly id: string
  readonly run: Run
  readonly request: RequestView
  readonly url: URL
  /** Null when the call was refused by the call budget. */
  readonly record: CallRecord | null
  readonly rule: Rule | null
  readonly fault: Fault | null
  /** The raw (unredacted) invocation key. */
  readonly rawKey: string
  readonly seed: number
  readonly clock: Clock
  /** Whether the rule's fault was actually injected (a lost response needs a 2xx to be). */
  #finished = false

  constructor(init: {
    id: string
    run: Run
    request: RequestView
    url: URL
    record: CallRecord | null
    rule: Rule | null
    fault: Fault | null
    rawKey: string
    seed: number
    clock: Clock
  }) {
    this.id = init.id
    this.run = init.run
    this.request = init.request
    this.url = init.url
    this.record = init.record
    this.rule = init.rule
    this.fault = init.fault
    this.rawKey = init.rawKey
    this.seed = init.seed
    this.clock = init.clock
  }

  get refused(): boolean {
    return this.record === null
  }

  get phase(): FaultPhase | null {
    return this.fault?.phase ?? null
  }

  get finished(): boolean {
    return this.#finished
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

  /** Note an advertised retry delay from the real upstream (a 429 or 503 with Retry-After). */
  noteRetryAfter(seconds: number): void {
    if (this.record && this.record.retryAfter === null) this.record.retryAfter = seconds
  }

  /** End the exchange. Later calls are ignored: the first ending is what the client saw. */
  finish(outcome: ExchangeOutcome, status: number | null, error: string | null = null): void {
    if (this.#finished) return
    this.#finished = true
    const record = this.record
    if (!record) return
    record.outcome = outcome
    record.status = status
    record.error = error
    record.elapsed = Math.max(0, roundSeconds(this.elapsedSinceStart() - record.started))
    if (channels.exchangeEnd.hasSubscribers) channels.exchangeEnd.publish({ run: this.run.id, exchangeId: this.id, call: record })
  }
}
