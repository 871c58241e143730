/**
 * Runs' own rules (`PUT /rules?run=`) shared by every replica, as one process keeps them: the
 * store holds each run's rules with a token; every BEGIN carries the token of the rules its replica
 * decided by, and one that meets another token is answered those rules instead (redis-calls.ts).
 * @see ../../docs/scale-out.md
 */
import { randomBytes } from 'node:crypto'
import { parseConfig, type CallDecider } from '../engine/call-decider.js'
import type { StormConfig } from '../engine/schema/config.js'
import type { RedisStore } from './redis-store.js'

/** Tokens of runs' own rules remembered (the oldest forgotten first: its run's rules are read again). */
const MAX_RULE_TOKENS = 10_000

export class RedisRunRules {
  readonly #store: RedisStore
  readonly #decider: CallDecider
  /** The token of the own rules (the store's) each run's calls are decided by here, by run id. */
  readonly #tokens = new Map<string, string>()

  /** Called when a run's own rules changed here (this replica's view of the run follows them). */
  readonly #onAdopted: (run: string) => void

  constructor(store: RedisStore, decider: CallDecider, onAdopted: (run: string) => void) {
    this.#store = store
    this.#decider = decider
    this.#onAdopted = onAdopted
  }

  /** Make `config` one run's own rules on every replica (null: back to the proxies' rules). */
  async publish(run: string, config: StormConfig | null): Promise<void> {
    const store = this.#store
    const key = store.runKeys(run).rules
    if (config === null) await store.command(() => store.client.del(key))
    else {
      const token = `${this.#decider.nonce}-${randomBytes(6).toString('base64url')}`
      await store.command(() => store.client.multi().hSet(key, { token, config: JSON.stringify(config) }).pExpire(key, Number(store.ttlMs)).exec())
    }
    // The caller gives the storm these rules next; until then this replica's calls read them again.
    this.#tokens.delete(run)
  }

  /** Bring one run's own rules as the store holds them to this replica. */
  async sync(run: string): Promise<void> {
    this.adopt(run, await this.#store.command(() => this.#store.client.hGetAll(this.#store.runKeys(run).rules)))
  }

  /** The token of the run's own rules this replica decides by: "" for none, "?" when it holds rules of unknown origin. */
  token(run: string): string {
    return this.#decider.hasRunConfig(run) ? (this.#tokens.get(run) ?? '?') : ''
  }

  /** Decide `run`'s calls by the own rules the store holds (`stored`: its rules hash), when they are not those already. */
  adopt(run: string, stored: { token?: string; config?: string }): void {
    const token = stored.token ?? ''
    if (token === this.token(run)) return
    const config = token === '' || !stored.config ? null : parseConfig(JSON.parse(stored.config), `the rules of run "${run}" in ${this.#store.where.shown}`, this.#decider.faults)
    this.#decider.setRunConfig(run, config)
    this.#onAdopted(run)
    this.#tokens.delete(run)
    if (config === null) return
    if (this.#tokens.size >= MAX_RULE_TOKENS) this.#tokens.delete(this.#tokens.keys().next().value as string)
    this.#tokens.set(run, token)
  }
}
