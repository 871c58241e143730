/**
 * A run's claims in the shared state store (`--state`), so that every replica's report judges
 * them against the merged calls and effects (docs/claims.md). One Redis list per run, beside its
 * calls and effects (same hash tag, same TTL); an element is a claim as `RunClaims` keeps it,
 * already redacted, without its id (the id is its place in the list). Behind `ClaimLog`, the
 * port a run ledger can take over.
 */
import { MAX_CLAIMS, RunClaims, type StoredClaim } from '../engine/run-claims.js'

/** Where a run's claims are kept, whatever keeps them. */
export interface ClaimLog {
  /** Keep a claim in the run's list; null when the list already holds `MAX_CLAIMS`. */
  add(key: string, claim: Omit<StoredClaim, 'id'>): Promise<StoredClaim | null>
  /** The run's claims as received, in order. */
  read(key: string): Promise<RunClaims>
}

/** The few list commands the log needs (node-redis' client has them). */
export interface ClaimConnection {
  rPush(key: string, element: string): Promise<number>
  rPop(key: string): Promise<unknown>
  pExpire(key: string, ms: number): Promise<unknown>
  lRange(key: string, start: number, stop: number): Promise<string[]>
}

export class RedisClaimLog implements ClaimLog {
  readonly #connection: ClaimConnection
  readonly #ttlMs: number
  /** Counts round trips and maps failures (the store's `#command`). */
  readonly #command: <T>(send: () => Promise<T>) => Promise<T>

  constructor(options: { connection: ClaimConnection; ttlMs: number; command: <T>(send: () => Promise<T>) => Promise<T> }) {
    this.#connection = options.connection
    this.#ttlMs = options.ttlMs
    this.#command = options.command
  }

  async add(key: string, claim: Omit<StoredClaim, 'id'>): Promise<StoredClaim | null> {
    const length = await this.#command(() => this.#connection.rPush(key, JSON.stringify(claim)))
    if (length > MAX_CLAIMS) {
      // Over the bound: take back the one just added (a race past it only refuses more).
      await this.#command(() => this.#connection.rPop(key))
      return null
    }
    await this.#command(() => this.#connection.pExpire(key, this.#ttlMs))
    return { ...claim, id: length }
  }

  async read(key: string): Promise<RunClaims> {
    const claims = new RunClaims()
    for (const text of await this.#command(() => this.#connection.lRange(key, 0, MAX_CLAIMS - 1))) claims.add(JSON.parse(text) as Omit<StoredClaim, 'id'>)
    return claims
  }
}
