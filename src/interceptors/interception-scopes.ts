/**
 * Which interception handles a request when several are active at once: vitest's `test.concurrent`
 * with the fixture, or `intercept()` in overlapping async tasks. Interception patches process-wide
 * globals, so without scopes the most recent one took every request, and one test received the
 * faults of another.
 *
 * Interceptions form a tree: each one's parent is the interception it was created within. A plain
 * `intercept()` nests on the newest active one, as before (a stack). The fixture's storms name their
 * test as `owner` and never nest on another test's, so two concurrent tests are separate branches.
 *
 * While the active interceptions form one chain (no concurrent tests), the newest answers every
 * request, exactly as before: no async context is consulted, so an interception created in a
 * helper after an `await`, or in a hook, works as it always did. Only when branches are active
 * does the request's async context decide: each interception entered its scope where it was
 * created (`AsyncLocalStorage.enterWith`, the way the pytest plugin tags a run's requests with a
 * header), and a request made in that task, or in what the task awaits or schedules after it,
 * belongs to it. A request with no live scope then has no owner: guessing would leak one test's
 * faults into another, so it is `ambiguous` and refused with ERR_INTERCEPT_AMBIGUOUS.
 *
 * `enterWith` also marks the rest of the caller's synchronous run, and vitest starts concurrent
 * tests from one such run: the next test begins inside the previous test's scope. That is why a
 * fixture storm skips entries of other owners when it looks for its parent.
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
    const mine = (entry: T) => owner === null || entry.owner === null || entry.owner === owner
    let parent = innermost(this.#storage.getStore() ?? null)
    while (parent && !mine(parent)) parent = innermost(parent.parent)
    // No scope to nest in: the newest active interception this one may nest on (a stack, as before).
    parent ??= this.#active.findLast(mine) ?? null
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
    const top = this.#active.at(-1)
    if (top === undefined) return { type: 'none' }
    if (this.#active.every((entry) => entry === top || encloses(entry, top))) return { type: 'entry', entry: top }
    const entry = innermost(this.#storage.getStore() ?? null)
    return entry ? { type: 'entry', entry } : { type: 'ambiguous', active: this.#active.length }
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
