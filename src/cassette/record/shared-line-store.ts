/**
 * Where a recorder's lines go when proxy replicas share a run through Redis (`--record` with
 * `--state`): each replica appends its exchanges to the run's cassette stream in Redis, and the
 * cassette is assembled from every replica's lines in call order when it is written.
 * @see ../../../docs/scale-out.md#recording-across-replicas
 */
import type { CassetteExchange, CassetteHeader } from '../format/cassette-schema.js'
import { Cassette } from '../format/cassette.js'
import { cutBodiesOf, type CutBodies } from '../format/cut-bodies.js'

/** What the recorder needs of the shared state store (RedisRunState). */
export interface SharedCassetteBackend {
  appendCassette(run: string, line: string, header: string | null): Promise<void>
  assembleCassette(runs: readonly string[] | null): Promise<{ header: CassetteHeader | null; exchanges: CassetteExchange[]; dropped: number }>
  /** Which replicas record into a cassette of one name, so that one writes it (src/state/redis-recorders.ts). */
  readonly recorders?: {
    beat(name: string, replica: string): Promise<void>
    addRun(name: string, run: string): Promise<void>
    leave(name: string, replica: string): Promise<{ others: number; runs: string[] }>
  }
}

/** Why this replica did not write the cassette: others still record into it, and the last to stop will. */
export interface LeftToOthers {
  readonly others: number
}

export class SharedLineStore {
  readonly #backend: SharedCassetteBackend
  readonly #header: () => string
  /** Runs this replica recorded (their header is in Redis once the first append went out). */
  readonly #runs = new Set<string>()
  readonly #pending = new Set<Promise<void>>()
  #count = 0
  /** The cut bodies of the cassette last written (every replica's exchanges of these runs). */
  written: CutBodies | null = null
  /** Set when this replica left the cassette to the replicas still recording into it. */
  leftToOthers: LeftToOthers | null = null
  /** The recording's name between replicas (the file's name), and this replica's id in it. */
  readonly #name: string | null
  readonly #replica: string

  constructor(backend: SharedCassetteBackend, header: () => string, recording: { name: string; replica: string } | null = null) {
    this.#backend = backend
    this.#header = header
    this.#name = recording?.name ?? null
    this.#replica = recording?.replica ?? ''
  }

  /** This replica is alive and records into the named cassette (renewed about once a second). */
  beat(): Promise<void> {
    if (!this.#name || !this.#backend.recorders) return Promise.resolve()
    return this.#backend.recorders.beat(this.#name, this.#replica).catch(() => undefined)
  }

  /** Lines this replica recorded. */
  get count(): number {
    return this.#count
  }

  /** The runs this replica recorded exchanges of. */
  get runs(): readonly string[] {
    return [...this.#runs]
  }

  /** Sent at once, not waited for: node-redis keeps one connection's commands in order. */
  append(line: string, run = ''): Promise<void> {
    const first = !this.#runs.has(run)
    this.#runs.add(run)
    this.#count++
    if (first && this.#name && this.#backend.recorders) void this.#backend.recorders.addRun(this.#name, run).catch(() => undefined)
    const sent = this.#backend.appendCassette(run, line, first ? this.#header() : null)
    this.#pending.add(sent)
    void sent.finally(() => this.#pending.delete(sent))
    return Promise.resolve()
  }

  /** The cassette of this replica's runs, with every replica's exchanges of them. */
  async assemble(): Promise<Cassette> {
    await Promise.all(this.#pending)
    const { header, exchanges } = await this.#backend.assembleCassette(this.runs)
    const { version: _version, kind: _kind, exchanges: _count, ...input } = header ?? (JSON.parse(this.#header()) as CassetteHeader)
    return Cassette.from(input, exchanges, 'the shared recording')
  }

  /**
   * Written as `Cassette.save` writes any cassette: the same file (and body files) whichever replica
   * writes it. Replicas recording into a cassette of one name leave it to the last of them to stop,
   * which writes every run any of them recorded: one replica writes the merged cassette, not each.
   */
  async writeTo(target: string): Promise<void> {
    let runs = this.runs
    if (this.#name && this.#backend.recorders) {
      await Promise.all(this.#pending)
      const { others, runs: recorded } = await this.#backend.recorders.leave(this.#name, this.#replica)
      if (others > 0) {
        this.leftToOthers = { others }
        return
      }
      runs = [...new Set([...recorded, ...runs])]
    }
    await Promise.all(this.#pending)
    const { header, exchanges } = await this.#backend.assembleCassette(runs)
    const { version: _version, kind: _kind, exchanges: _count, ...input } = header ?? (JSON.parse(this.#header()) as CassetteHeader)
    const cassette = Cassette.from(input, exchanges, 'the shared recording')
    await cassette.save(target)
    this.written = cutBodiesOf(cassette.exchanges)
  }

  async *lines(): AsyncIterable<string> {
    const cassette = await this.assemble()
    for (const exchange of cassette.exchanges) yield JSON.stringify(exchange)
  }

  async dispose(): Promise<void> {
    await Promise.all(this.#pending)
  }
}
