/**
 * The recorder's writer half: where finished exchanges' lines go and how the cassette file is
 * kept whole. With a `file`, lines go to an append-only journal (large bodies to body files) and
 * the cassette is replaced atomically by a complete snapshot about once a second (less often as
 * it grows) and on `finish()`, so a `kill -9` leaves the previous complete cassette or a newer
 * complete one, never a torn file. With a shared store, Redis holds the lines; else memory does.
 */
import { existsSync } from 'node:fs'
import type { CassetteExchange, CassetteFileExchange, CassetteHeader } from '../format/cassette-schema.js'
import { ToolstormError } from '../../errors.js'
import { BodyFileReader, BodyFileWriter, bodiesFolderFor, hasBodyFiles } from '../format/body-files.js'
import { Cassette } from '../format/cassette.js'
import { CutBodyTally, type CutBodies } from '../format/cut-bodies.js'
import { JournalLineStore, MemoryLineStore, journalPathFor, type LineStore } from './cassette-journal.js'
import { SharedLineStore, type SharedCassetteBackend } from './shared-line-store.js'

export interface CassetteWriterOptions {
  readonly file?: string | undefined
  readonly shared?: SharedCassetteBackend | undefined
  /** The cassette's header line for `count` exchanges. */
  readonly header: (count: number) => CassetteHeader
  /** Milliseconds between snapshots (default 1000; a snapshot never takes more than ~10% of the time). */
  readonly snapshotIntervalMs?: number | undefined
}

/** Rewrites a stored line as it is read back (effects reported after it was written). */
export type LinePatch = ((line: string) => string) | undefined

export class CassetteWriter {
  readonly #options: CassetteWriterOptions
  readonly #cut = new CutBodyTally()
  /** With a file (and no shared store): large bodies go to body files as each line is made, so the journal and snapshots stay small. */
  readonly #bodies: BodyFileWriter | null
  #store: LineStore | null = null
  readonly #storeReady: Promise<LineStore>
  #snapshots = true
  #timer: NodeJS.Timeout | null = null
  #snapshotting: Promise<void> | null = null
  #snapshotCount = 0
  #keptPrevious = false
  /** A run was forgotten: the lines kept number their exchanges with gaps, renumbered as they are read. */
  #forgot = false

  constructor(options: CassetteWriterOptions) {
    this.#options = options
    const { file, shared } = options
    this.#bodies = file && !shared ? new BodyFileWriter(bodiesFolderFor(file)) : null
    const store = shared ? Promise.resolve(new SharedLineStore(shared, () => JSON.stringify(options.header(0)))) : file ? JournalLineStore.create(journalPathFor(file)) : Promise.resolve(new MemoryLineStore())
    this.#storeReady = store.then((ready) => (this.#store = ready))
    if (file && !shared) this.#schedule(options.snapshotIntervalMs ?? 1000)
  }

  /** Resolves once lines can be kept (the journal is open); rejects with why they cannot. */
  ready(): Promise<LineStore> {
    return this.#storeReady
  }

  /** Keep one exchange's line. */
  async append(stored: CassetteExchange, run: string): Promise<void> {
    this.#cut.add(stored)
    const line = JSON.stringify(this.#bodies ? await this.#bodies.exchange(stored) : stored)
    const store = this.#store ?? (await this.#storeReady)
    await store.append(line, run)
  }

  /**
   * Bodies cut at the body limit so far, per route. With a shared store, after `finish()`: those
   * of the cassette written, every replica's exchanges included.
   */
  get cutBodies(): CutBodies {
    const shared = this.#store instanceof SharedLineStore ? this.#store.written : null
    return shared ?? this.#cut.summary()
  }

  /** After `finish()`: nothing was recorded and the cassette file already there was left as it was. */
  get keptPrevious(): boolean {
    return this.#keptPrevious
  }

  #schedule(delayMs: number): void {
    this.#timer = setTimeout(() => {
      this.#timer = null
      const started = performance.now()
      void this.snapshot().finally(() => {
        if (!this.#snapshots) return
        // Keep snapshot I/O to about a tenth of the time, however large the cassette grows.
        this.#schedule(Math.max(this.#options.snapshotIntervalMs ?? 1000, (performance.now() - started) * 10))
      })
    }, delayMs)
    this.#timer.unref()
  }

  /** No more periodic snapshots (one running still ends). */
  stopSnapshots(): void {
    this.#snapshots = false
    if (this.#timer) clearTimeout(this.#timer)
  }

  /** Replace the cassette file with a complete snapshot of the lines kept so far. */
  snapshot(): Promise<void> {
    const file = this.#options.file
    if (!file) return Promise.resolve()
    this.#snapshotting ??= (async () => {
      try {
        const store = await this.#storeReady
        if (store.count === this.#snapshotCount || store.count === 0) return
        const count = store.count
        await store.writeTo(file, JSON.stringify(this.#options.header(count)), undefined, this.#beforeRename)
        this.#snapshotCount = count
      } catch {
        // A failed snapshot (a full disk, for a moment) leaves the previous one in place; the
        // next snapshot or finish() writes everything again, and finish() reports its own failure.
      } finally {
        this.#snapshotting = null
      }
    })()
    return this.#snapshotting
  }

  /** Write the final cassette (with a file), atomically; nothing recorded keeps the file already there (#29). */
  async finish(patch: LinePatch): Promise<void> {
    this.stopSnapshots()
    await this.#snapshotting
    const { file, shared } = this.#options
    const store = await this.#storeReady
    this.#keptPrevious = file !== undefined && !shared && store.count === 0 && existsSync(file)
    if (!file || this.#keptPrevious) return
    try {
      await store.writeTo(file, JSON.stringify(this.#options.header(store.count)), patch, this.#beforeRename)
      // The cassette in place no longer needs the body files of the one it replaced.
      await this.#bodies?.sweep()
    } catch (error) {
      if (error instanceof ToolstormError) throw error
      const code = (error as NodeJS.ErrnoException).code ?? String(error)
      throw new ToolstormError('ERR_FILE_UNWRITABLE', `Failed to write the cassette ${file}: ${code}. ${shared ? 'Redis holds every exchange: write it with toolstorm report --state URL --cassette FILE.' : `The previous snapshot (if any) is intact, and the journal ${journalPathFor(file)} holds every exchange.`}`, { cause: error })
    }
  }

  /** Drop the lines of `run` (memory only); how many there were, or null when the store cannot. */
  async forget(run: string): Promise<number | null> {
    const store = await this.#storeReady
    if (!store.forget) return null
    const dropped = store.forget(run)
    if (dropped) this.#forgot = true
    return dropped
  }

  /** Release the journal (with a file). */
  async dispose(): Promise<void> {
    this.stopSnapshots()
    const store = await this.#storeReady.catch(() => null)
    await store?.dispose()
  }

  /** Body files are made durable before the cassette that refers to them is renamed into place. */
  readonly #beforeRename = async (): Promise<void> => {
    await this.#bodies?.sync()
  }

  /** The cassette kept so far, in memory, every body inline. */
  async cassette(patch: LinePatch): Promise<Cassette> {
    const store = await this.#storeReady
    // Every replica's exchanges, under the header the store assembles (with the claims it holds).
    if (store instanceof SharedLineStore) return store.assemble()
    const exchanges: unknown[] = []
    const bodies = this.#bodies ? new BodyFileReader(this.#options.file as string, this.#bodies.folder) : null
    let number = 1
    for await (const line of store.lines()) {
      const parsed = JSON.parse(patch ? patch(line) : line) as CassetteFileExchange
      const exchange = this.#forgot ? { ...parsed, seq: number } : parsed
      number++
      exchanges.push(bodies && hasBodyFiles(exchange) ? await bodies.exchange(exchange, number) : exchange)
    }
    return Cassette.from(this.#options.header(exchanges.length), exchanges, this.#options.file ?? '<recording>')
  }
}
