/**
 * The rules every replica serves, under one version key in Redis: `PUT /rules` on any replica
 * writes a new version; the others re-read it when pub/sub nudges them and every 500 ms anyway,
 * since a pub/sub message sent while a replica was disconnected is lost.
 * @see ../../docs/scale-out.md#rules-change-everywhere
 */
import type { StormConfig } from '../engine/schema/config.js'
import { parseConfig, type CallDecider } from '../engine/call-decider.js'

/** How often a replica re-reads the rules' version (pub/sub only nudges it sooner). */
const RULES_POLL_MS = 500

/** What the rules need of a Redis connection (node-redis's client). */
export interface RulesConnection {
  hGet(key: string, field: string): Promise<string | null | undefined | object>
  hmGet(key: string, fields: string[]): Promise<Array<string | null | undefined | object>>
  publish(channel: string, message: string): Promise<unknown>
  multi(): { hIncrBy(key: string, field: string, by: number): { hSet(key: string, field: string, value: string): { exec(): Promise<unknown> } } }
}

/** A connection that only listens (a subscribed node-redis client). */
export interface RulesSubscriber {
  subscribe(channel: string, listener: () => void): Promise<unknown>
}

export class SharedRules {
  /** What decides this replica's calls: the rules are applied to it. */
  readonly #decider: CallDecider
  readonly #connection: RulesConnection
  readonly #key: string
  readonly #source: string
  readonly #onApplied: ((version: number) => void) | undefined
  /** Counts round trips and maps failures (the store's `#command`). */
  readonly #command: <T>(send: () => Promise<T>) => Promise<T>
  #version = 0
  #poll: NodeJS.Timeout | null = null

  constructor(options: { decider: CallDecider; connection: RulesConnection; key: string; source: string; command: <T>(send: () => Promise<T>) => Promise<T>; onApplied?: ((version: number) => void) | undefined }) {
    this.#decider = options.decider
    this.#connection = options.connection
    this.#key = options.key
    this.#source = options.source
    this.#command = options.command
    this.#onApplied = options.onApplied
  }

  /** The version of the rules this replica serves (0: none from Redis yet). */
  get version(): number {
    return this.#version
  }

  /** Make this replica's rules every replica's (at start, `--state-rules publish`). */
  share(): Promise<void> {
    return this.publish(this.#decider.config)
  }

  /** Make `config` the rules of every replica: a new version (one MULTI), then a nudge. */
  async publish(config: StormConfig): Promise<void> {
    const result = (await this.#command(() => this.#connection.multi().hIncrBy(this.#key, 'version', 1).hSet(this.#key, 'config', JSON.stringify(config)).exec())) as unknown[]
    this.#version = Number(result[0])
    await this.#command(() => this.#connection.publish(this.#key, String(this.#version)))
  }

  /** Apply the shared rules when they are newer than this replica's. */
  async check(): Promise<void> {
    const version = Number(await this.#command(() => this.#connection.hGet(this.#key, 'version')))
    if (!version || version === this.#version) return
    // Read together: a version never goes with another version's rules.
    const [latest, text] = await this.#command(() => this.#connection.hmGet(this.#key, ['version', 'config']))
    const current = Number(latest)
    if (typeof text !== 'string' || current <= this.#version) return
    this.#version = current
    // Exchanges already begun keep the rule they selected (setConfig leaves them alone).
    this.#decider.setConfig(parseConfig(JSON.parse(text), `the rules in ${this.#source}`, this.#decider.faults))
    this.#onApplied?.(current)
  }

  /** Follow other replicas' changes: nudged by `subscriber`, and polled. */
  async follow(subscriber: RulesSubscriber): Promise<void> {
    const check = () => void this.check().catch(() => undefined)
    await subscriber.subscribe(this.#key, check)
    this.#poll = setInterval(check, RULES_POLL_MS)
    this.#poll.unref()
  }

  stop(): void {
    if (this.#poll) clearInterval(this.#poll)
    this.#poll = null
  }
}
