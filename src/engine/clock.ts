/**
 * Clocks. Every wait the engine makes (latency, timeouts) and every timing it records goes
 * through one, so tests can use virtual time: `sleep` then advances time without waiting.
 */

/** Times in seconds. */
export interface Clock {
  readonly kind: 'real' | 'virtual' | (string & {})
  /** Seconds since an arbitrary origin; only differences matter. */
  now(): number
  /** Wait `seconds`. Rejects with the signal's reason if it aborts first. */
  sleep(seconds: number, signal?: AbortSignal): Promise<void>
}

/** setTimeout's largest delay; longer waits would fire immediately. */
const SET_TIMEOUT_MAX_MS = 2_147_483_647

/** Monotonic wall time; `sleep` really waits. */
export class RealClock implements Clock {
  readonly kind = 'real'

  now(): number {
    return performance.now() / 1000
  }

  sleep(seconds: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason)
    if (seconds <= 0) return Promise.resolve()
    return new Promise((resolve, reject) => {
      const timer = setTimeout(done, Math.min(seconds * 1000, SET_TIMEOUT_MAX_MS))
      function done() {
        signal?.removeEventListener('abort', onAbort)
        resolve()
      }
      function onAbort() {
        clearTimeout(timer)
        reject(signal?.reason)
      }
      signal?.addEventListener('abort', onAbort, { once: true })
    })
  }
}

/**
 * Sequential test time: starts at 0, `sleep(s)` adds `s` and yields once to the event loop.
 * @note Concurrent sleeps simply add up; this is a fixture model, not a scheduler.
 */
export class VirtualClock implements Clock {
  readonly kind = 'virtual'
  #now = 0

  now(): number {
    return this.#now
  }

  /** Advance time by `seconds` without waiting. */
  advance(seconds: number): void {
    if (!Number.isFinite(seconds) || seconds < 0) throw new RangeError('Failed to advance the virtual clock: seconds must be finite and nonnegative.')
    this.#now += seconds
  }

  async sleep(seconds: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) throw signal.reason
    this.advance(Math.max(0, seconds))
    await new Promise<void>((resolve) => setImmediate(resolve))
  }
}

/** Round a duration in seconds to 6 decimals, as reports store them. */
export function roundSeconds(value: number): number {
  const rounded = Math.round(value * 1e6) / 1e6
  return Object.is(rounded, -0) ? 0 : rounded
}
