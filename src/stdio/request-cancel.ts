/**
 * How one relayed request is cancelled (the client's `notifications/cancelled`, or the connection
 * ending): the reason, the listeners waiting on it, and an `AbortSignal` made only when something
 * asks for one (the engine's flow on a failure, a fault's wait, a cassette). An AbortController
 * per request cost about 10 µs a call in the wrapper's profile, and a call with no fault never
 * needs its signal.
 */
export class RequestCancel {
  #reason: Error | null = null
  #controller: AbortController | null = null
  #listeners: ((reason: Error) => void)[] | null = null

  get aborted(): boolean {
    return this.#reason !== null
  }

  get reason(): Error | null {
    return this.#reason
  }

  /** The signal, made on first use (aborted already when the request was). */
  get signal(): AbortSignal {
    if (this.#controller === null) {
      this.#controller = new AbortController()
      if (this.#reason !== null) this.#controller.abort(this.#reason)
    }
    return this.#controller.signal
  }

  /** `listener` hears the cancel once; returns how to stop listening. */
  onAbort(listener: (reason: Error) => void): () => void {
    ;(this.#listeners ??= []).push(listener)
    return () => {
      const at = this.#listeners?.indexOf(listener) ?? -1
      if (at !== -1) this.#listeners!.splice(at, 1)
    }
  }

  abort(reason: Error): void {
    if (this.#reason !== null) return
    this.#reason = reason
    const listeners = this.#listeners
    this.#listeners = null
    if (listeners) for (const listener of listeners) listener(reason)
    this.#controller?.abort(reason)
  }
}
