/**
 * Which interception handles a request when several are active at once: vitest's `test.concurrent`
 * with the fixture, or `intercept()` in overlapping async tasks. Interception patches process-wide
 * globals, so without scopes the most recent one took every request, and one test received the
 * faults of another.
 *
 * Each interception enters an async scope where it is created (`AsyncLocalStorage.enterWith`, the
 * way the pytest plugin tags a run's requests with a header): a request made in that task, or in
 * anything the task awaits or schedules after it, belongs to it. Interceptions created inside
 * another's scope nest: the innermost active one answers, and the outer one again once it is
 * disposed. A request whose scope's interceptions are all disposed passes through untouched.
 *
 * `enterWith` also marks the rest of the caller's synchronous run, and vitest starts concurrent
 * tests from one such run: the next test begins inside the previous test's scope. So an entry
 * may name its `owner` (the fixture: its test); an entry of another owner is never its parent.
 *
 * A request made outside every scope (a server or a timer started before the interceptions) is
 * answered by the only active interception, or the innermost of one nested chain, as before. With
 * interceptions of separate tasks active it has no owner: guessing would leak one test's faults
 * into another, so it is `ambiguous` and the caller refuses it with ERR_INTERCEPT_AMBIGUOUS.
 */
import { AsyncLocalStorage } from 'node:async_hooks'

export interface Scoped<T> {
  /** The interception active in the scope where this one was created. */
  readonly parent: T | null
  /** Whose it is (the fixture's test), or null: any interception it was created in encloses it. */
  readonly owner: object | null
  disposed: boolean
}

export type ScopeResolution<T> = { readonly type: 'entry'; readonly entry: T } | { readonly type: 'none' } | { readonly type: 'ambiguous'; readonly active: number }

export class InterceptionScopes<T extends Scoped<T>> {
  readonly #storage = new AsyncLocalStorage<T>()
  readonly #active: T[] = []

  get size(): number {
    return this.#active.length
  }

  /** Activate the entry `create` makes (given its parent) and enter its scope in the calling task. */
  enter(owner: object | null, create: (parent: T | null) => T): T {
    let parent = innermost(this.#storage.getStore() ?? null)
    while (owner !== null && parent && parent.owner !== null && parent.owner !== owner) parent = innermost(parent.parent)
    const entry = create(parent)
    this.#active.push(entry)
    this.#storage.enterWith(entry)
    return entry
  }

  leave(entry: T): void {
    entry.disposed = true
    const index = this.#active.lastIndexOf(entry)
    if (index !== -1) this.#active.splice(index, 1)
  }

  /** The interception that owns a request made in the calling task. */
  resolve(): ScopeResolution<T> {
    const scope = this.#storage.getStore()
    if (scope !== undefined) {
      const entry = innermost(scope)
      return entry ? { type: 'entry', entry } : { type: 'none' }
    }
    const top = this.#active.at(-1)
    if (top === undefined) return { type: 'none' }
    if (this.#active.every((entry) => entry === top || encloses(entry, top))) return { type: 'entry', entry: top }
    return { type: 'ambiguous', active: this.#active.length }
  }
}

function innermost<T extends Scoped<T>>(entry: T | null): T | null {
  let current = entry
  while (current && current.disposed) current = current.parent
  return current
}

function encloses<T extends Scoped<T>>(outer: T, inner: T): boolean {
  for (let current = inner.parent; current; current = current.parent) if (current === outer) return true
  return false
}
