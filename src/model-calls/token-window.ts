/**
 * The budget a `token_limit` rule keeps per run: the model calls it let through in the current
 * one-minute window, with their records, so the tokens are read from the real usage of each call
 * as it is answered (the model-call observer keeps `record.model` current). Windows are fixed
 * minutes from the run's start on the storm's clock (real or virtual): simple to reason about,
 * and the reset the 429 reports is exact (the window's end), where a sliding window's is not.
 */
import type { CallUsageView } from '../engine/faults/fault.js'

export const WINDOW_SECONDS = 60

export interface WindowUsage {
  /** Calls let through in this window (the requests the provider served). */
  readonly requests: number
  /** Input plus output tokens those calls reported so far (a call still streaming counts what arrived). */
  readonly tokens: number
  /** Seconds until the window ends and the budget is whole again. */
  readonly resetSeconds: number
}

export class TokenWindow {
  #index = -1
  #calls: CallUsageView[] = []

  /** The usage of the window `elapsed` (seconds since the run started) falls in. */
  usage(elapsed: number): WindowUsage {
    this.#roll(elapsed)
    let tokens = 0
    for (const call of this.#calls) tokens += (call.model?.inputTokens ?? 0) + (call.model?.outputTokens ?? 0)
    return { requests: this.#calls.length, tokens, resetSeconds: (this.#index + 1) * WINDOW_SECONDS - elapsed }
  }

  /** Count a call let through at `elapsed`. */
  admit(elapsed: number, call: CallUsageView | null): void {
    this.#roll(elapsed)
    if (call) this.#calls.push(call)
  }

  #roll(elapsed: number): void {
    const index = Math.floor(Math.max(0, elapsed) / WINDOW_SECONDS)
    if (index === this.#index) return
    this.#index = index
    this.#calls = []
  }
}

/** One window per run and rule; a run forgotten (`storm.reset()`) is a new object, so its budget starts again. */
export class TokenWindows {
  readonly #windows = new WeakMap<object, Map<string, TokenWindow>>()

  of(run: object, rule: string): TokenWindow {
    let byRule = this.#windows.get(run)
    if (!byRule) this.#windows.set(run, (byRule = new Map()))
    let window = byRule.get(rule)
    if (!window) byRule.set(rule, (window = new TokenWindow()))
    return window
  }
}
