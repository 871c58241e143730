/**
 * The budget a `token_limit` rule keeps per run: the model calls it let through in the current
 * one-minute window, with their records, so the tokens are read from the real usage of each call
 * as it is answered (the model-call observer keeps `record.model` current). Windows are fixed
 * minutes from the run's start on the storm's clock (real or virtual): simple to reason about,
 * and the reset the 429 reports is exact (the window's end), where a sliding window's is not.
 */
import type { CallUsageView, QuotaVerdict, WindowUsage } from '../../engine/faults/fault.js'

export type { QuotaVerdict, WindowUsage }

export const WINDOW_SECONDS = 60

/** The budget a `token_limit` rule allows per window. */
export interface QuotaLimits {
  readonly tokensPerMinute: number
  readonly requestsPerMinute?: number | undefined
}

/** The window `elapsed` (seconds since the run started) falls in. */
export function windowOf(elapsed: number): number {
  return Math.floor(Math.max(0, elapsed) / WINDOW_SECONDS)
}

/** Whether a window with `usage` still has room for one more call. */
export function hasRoom(usage: Pick<WindowUsage, 'tokens' | 'requests'>, limits: QuotaLimits): boolean {
  return usage.tokens < limits.tokensPerMinute && (limits.requestsPerMinute === undefined || usage.requests < limits.requestsPerMinute)
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

  /** Let `call` through at `elapsed` when the window has room; the verdict either way. */
  take(elapsed: number, limits: QuotaLimits, call: CallUsageView | null): QuotaVerdict {
    const usage = this.usage(elapsed)
    const admitted = hasRoom(usage, limits)
    if (admitted) this.admit(elapsed, call)
    return { admitted, window: this.#index, usage }
  }

  /** Count a call let through at `elapsed`. */
  admit(elapsed: number, call: CallUsageView | null): void {
    this.#roll(elapsed)
    if (call) this.#calls.push(call)
  }

  #roll(elapsed: number): void {
    const index = windowOf(elapsed)
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
