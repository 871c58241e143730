/**
 * `node:async_hooks` for the browser build. The browser lab never propagates an exchange
 * context (its transport does not set `propagatesContext`), so a synchronous store is enough.
 */
export class AsyncLocalStorage<T> {
  #store: T | undefined

  getStore(): T | undefined {
    return this.#store
  }

  run<R>(store: T, callback: () => R): R {
    const previous = this.#store
    this.#store = store
    try {
      return callback()
    } finally {
      this.#store = previous
    }
  }
}

export default { AsyncLocalStorage }
