/**
 * A run's claims in the shared state store (`--state`), so that every replica's report judges
 * them against the merged calls and effects (docs/claims.md). One Redis list per run, beside its
 * calls and effects (same hash tag, same TTL); an element is a claim as `RunClaims` keeps it,
 * already redacted, without its id (the id is its place in the list). The OTLP spans that brought
 * claims leave their parent links (which join a claim to the calls made under its span) and their
 * counts in a hash beside it. Behind `ClaimLog`, the port a run ledger can take over.
 */
import { MAX_CLAIMS, MAX_SPAN_LINKS, RunClaims, type StoredClaim } from '../engine/run-claims.js'

/** Where a run's claims are kept, whatever keeps them. */
export interface ClaimLog {
  /** Keep a claim in the run's list; null when the list already holds `MAX_CLAIMS`. */
  add(key: string, claim: Omit<StoredClaim, 'id'>): Promise<StoredClaim | null>
  /** Keep several claims (an OTLP export's) in one push: how many fit under `MAX_CLAIMS`, the first ones. */
  addAll(key: string, claims: ReadonlyArray<Omit<StoredClaim, 'id'>>): Promise<number>
  /** The run's claims as received, in order (with `spansKey`: the spans' links and counts too). */
  read(key: string, spansKey?: string): Promise<RunClaims>
  /** Count an OTLP export's spans and keep their parent links. */
  addSpans(key: string, counts: { received: number; ignored: number; claims: number }, links: ReadonlyArray<readonly [string, string]>): Promise<void>
}

/** The few list and hash commands the log needs (node-redis' client has them). */
export interface ClaimConnection {
  rPush(key: string, element: string | string[]): Promise<number>
  lTrim(key: string, start: number, stop: number): Promise<unknown>
  rPop(key: string): Promise<unknown>
  pExpire(key: string, ms: number): Promise<unknown>
  lRange(key: string, start: number, stop: number): Promise<string[]>
  hLen(key: string): Promise<number>
  hSet(key: string, fields: Record<string, string>): Promise<number>
  hIncrBy(key: string, field: string, increment: number): Promise<number>
  hGetAll(key: string): Promise<Record<string, string>>
}

/** Span counts in a run's spans hash: names no span id takes (those are hex). */
const COUNTS = { received: '#received', ignored: '#ignored', claims: '#claims' } as const

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

  async addAll(key: string, claims: ReadonlyArray<Omit<StoredClaim, 'id'>>): Promise<number> {
    if (claims.length === 0) return 0
    const length = await this.#command(() => this.#connection.rPush(key, claims.map((claim) => JSON.stringify(claim))))
    // Over the bound: the ones just added past it go again (a race past it only refuses more).
    const over = Math.min(claims.length, Math.max(0, length - MAX_CLAIMS))
    if (over > 0) await this.#command(() => this.#connection.lTrim(key, 0, MAX_CLAIMS - 1))
    await this.#command(() => this.#connection.pExpire(key, this.#ttlMs))
    return claims.length - over
  }

  /**
   * The run's claims as received, in order; with `spansKey`, the OTLP spans' parent links and
   * counts too (its hash: a field per span id, and the counts).
   */
  async read(key: string, spansKey?: string): Promise<RunClaims> {
    const claims = new RunClaims()
    for (const text of await this.#command(() => this.#connection.lRange(key, 0, MAX_CLAIMS - 1))) claims.add(JSON.parse(text) as Omit<StoredClaim, 'id'>)
    if (spansKey === undefined) return claims
    const spans = await this.#command(() => this.#connection.hGetAll(spansKey))
    for (const [field, value] of Object.entries(spans)) {
      if (field.startsWith('#')) continue
      claims.link(field, value)
    }
    for (const [name, field] of Object.entries(COUNTS)) claims.spans[name as keyof typeof COUNTS] = Number(spans[field] ?? 0)
    return claims
  }

  /**
   * Count an export's spans and keep their parent links in the run's spans hash (`MAX_SPAN_LINKS`
   * at most: past it, the links already kept stay, as one process keeps them).
   */
  async addSpans(key: string, counts: { received: number; ignored: number; claims: number }, links: ReadonlyArray<readonly [string, string]>): Promise<void> {
    for (const [name, field] of Object.entries(COUNTS)) {
      const count = counts[name as keyof typeof COUNTS]
      if (count > 0) await this.#command(() => this.#connection.hIncrBy(key, field, count))
    }
    if (links.length > 0) {
      const room = MAX_SPAN_LINKS + Object.keys(COUNTS).length - (await this.#command(() => this.#connection.hLen(key)))
      if (room > 0) await this.#command(() => this.#connection.hSet(key, Object.fromEntries(links.slice(0, room))))
    }
    await this.#command(() => this.#connection.pExpire(key, this.#ttlMs))
  }
}
