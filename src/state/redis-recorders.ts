/**
 * Which replicas record into a cassette of one name (`--record FILE` with `--state`), so that one
 * of them writes the merged cassette, not each: every replica keeps a heartbeat in a hash of the
 * recording (`PREFIX:recorders:NAME`, renewed about once a second) and adds each run it records to
 * a set (`PREFIX:recorded:NAME`). At stop a replica leaves the hash; the last one alive (no other
 * heartbeat younger than `staleMs`: a replica killed with `kill -9` stops beating) writes the
 * cassette of every run in the set, and the others say who will. Both keys live as long as a run's.
 * @see ../../docs/scale-out.md#recording-across-replicas
 */

/** The hash and set commands the registry needs (node-redis' client has them). */
export interface RecordersConnection {
  hSet(key: string, field: string, value: string): Promise<number>
  hDel(key: string, field: string): Promise<number>
  hGetAll(key: string): Promise<Record<string, string>>
  sAdd(key: string, member: string): Promise<number>
  sMembers(key: string): Promise<string[]>
  pExpire(key: string, ms: number): Promise<unknown>
}

/** A heartbeat older than this is a replica that died without leaving. */
const STALE_MS = 10_000

export class RedisRecorders {
  readonly #connection: RecordersConnection
  readonly #prefix: string
  readonly #ttlMs: number
  readonly #command: <T>(send: () => Promise<T>) => Promise<T>

  constructor(options: { connection: RecordersConnection; prefix: string; ttlMs: number; command: <T>(send: () => Promise<T>) => Promise<T> }) {
    this.#connection = options.connection
    this.#prefix = options.prefix
    this.#ttlMs = options.ttlMs
    this.#command = options.command
  }

  #keys(name: string): { recorders: string; runs: string } {
    return { recorders: `${this.#prefix}:recorders:${name}`, runs: `${this.#prefix}:recorded:${name}` }
  }

  /** This replica records into `name`, alive now. */
  async beat(name: string, replica: string): Promise<void> {
    const { recorders } = this.#keys(name)
    await this.#command(() => this.#connection.hSet(recorders, replica, String(Date.now())))
    await this.#command(() => this.#connection.pExpire(recorders, this.#ttlMs))
  }

  /** A run this replica recorded into `name`. */
  async addRun(name: string, run: string): Promise<void> {
    const { runs } = this.#keys(name)
    await this.#command(() => this.#connection.sAdd(runs, run))
    await this.#command(() => this.#connection.pExpire(runs, this.#ttlMs))
  }

  /** This replica stops recording into `name`: the replicas still alive, and every run recorded into it. */
  async leave(name: string, replica: string): Promise<{ others: number; runs: string[] }> {
    const { recorders, runs } = this.#keys(name)
    await this.#command(() => this.#connection.hDel(recorders, replica))
    const beats = await this.#command(() => this.#connection.hGetAll(recorders))
    const now = Date.now()
    const others = Object.values(beats).filter((at) => now - Number(at) < STALE_MS).length
    return { others, runs: await this.#command(() => this.#connection.sMembers(runs)) }
  }
}
