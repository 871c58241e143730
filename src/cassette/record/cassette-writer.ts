/**
 * The recorder's writer half: where finished exchanges' lines go. With a `file`, the cassette
 * itself, append-only (cassette-appender.ts): each line written once, the file valid at every
 * moment and after a `kill -9`, fsynced about once a second; claims and rule changes are appended
 * as they change; with rotation, a series of parts and their index (cassette-parts.ts). With a
 * shared store, Redis holds the lines; else memory does.
 */
import type { CassetteClaim, CassetteExchange, CassetteHeader, SegmentSettings, StoredEffect } from '../format/cassette-schema.js'
import { rm } from 'node:fs/promises'
import path from 'node:path'
import { ToolstormError } from '../../errors.js'
import { Cassette } from '../format/cassette.js'
import { CutBodyTally, type CutBodies } from '../format/cut-bodies.js'
import { CassetteParts, indexFileFor, type RotationOptions } from './cassette-parts.js'
import { extractRuns } from '../format/extract.js'
import type { RecordingStart } from './open-cassette-file.js'
import { settingsOf } from './open-cassette-file.js'
import { SharedLineStore, type SharedCassetteBackend } from './shared-line-store.js'

export interface CassetteWriterOptions {
  readonly file?: string | undefined
  readonly shared?: SharedCassetteBackend | undefined
  /** The cassette's header (in memory: with its claims) for `count` exchanges. */
  readonly header: (count: number) => CassetteHeader
  /** Replace a file already there instead of appending to it. */
  readonly overwrite?: boolean | undefined
  /** Milliseconds between checkpoints: fsync, changed claims and rules (default 1000). */
  readonly checkpointMs?: number | undefined
  /** Without a file or shared store: keep lines in memory (default true); false keeps them nowhere. */
  readonly memory?: boolean | undefined
  /** With a shared store: this replica's id among those recording into a file of the same name. */
  readonly replica?: string | undefined
  /** With a file: rotate into parts (cassette-parts.ts). */
  readonly rotation?: RotationOptions | null | undefined
}

/** Runs whose last written claims are remembered, to append only those that changed. */
const CLAIMS_REMEMBERED = 10_000

export class CassetteWriter {
  readonly #options: CassetteWriterOptions
  readonly #cut = new CutBodyTally()
  /** With a file (and no shared store): the file or its parts, opened on first use. */
  #parts: Promise<CassetteParts> | null = null
  readonly #shared: SharedLineStore | null
  /** In memory (no file, no shared store): the lines, and effects reported after them. */
  readonly #memory: string[] = []
  readonly #late = new Map<number, StoredEffect[]>()
  #timer: NodeJS.Timeout | null = null
  #checkpointing: Promise<void> | null = null
  /** The claims last appended per run (JSON), so only changes are written. */
  readonly #claimsWritten = new Map<string, string>()
  #keptPrevious = false
  #finished = false
  /** `finish()` ran to its end: the file is complete, whatever it holds. */
  #complete = false
  /** In memory: the run of each line of `#memory` (same index), so a run can be forgotten. */
  readonly #memoryRuns: string[] = []
  /** In memory: the `seq` of each line still held (late effects for any other are dropped, not kept forever). */
  readonly #memorySeqs = new Set<number>()
  /** A run was forgotten: the lines kept number their exchanges with gaps, renumbered as they are read. */
  #forgot = false

  constructor(options: CassetteWriterOptions) {
    this.#options = options
    const { file, shared } = options
    // Replicas recording into a file of one name coordinate who writes it (its name, this storm's nonce).
    this.#shared = shared ? new SharedLineStore(shared, () => JSON.stringify(options.header(0)), file && options.replica ? { name: path.basename(file), replica: options.replica } : null) : null
    if (file) this.#schedule()
  }

  /**
   * The file, opened on first use (`ready()` or the first line): by then the front door the
   * recorder was given to has said where it sits, so the header names the source and targets.
   */
  #open(): Promise<CassetteParts> | null {
    const file = this.#options.file
    if (!file || this.#shared) return null
    if (!this.#parts) {
      this.#parts = CassetteParts.open(file, this.#options.header, { overwrite: this.#options.overwrite ?? false, rotation: this.#options.rotation ?? null })
      this.#parts.catch(() => undefined)
    }
    return this.#parts
  }

  /** With a file: the files this recording wrote to (one, or its parts). */
  async files(): Promise<string[]> {
    return (await this.#parts?.catch(() => null))?.files ?? []
  }

  /** Resolves once lines can be kept (with a file: what was done with it); rejects with why they cannot. */
  async ready(): Promise<RecordingStart | null> {
    await this.#shared?.beat()
    const appender = this.#open()
    return appender ? (await appender).start : null
  }

  /** Keep one exchange's line (`stored.seq`: its place in this recording). */
  async append(stored: CassetteExchange, run: string): Promise<void> {
    this.#cut.add(stored)
    if (this.#shared) return this.#shared.append(JSON.stringify(stored), run)
    const opening = this.#open()
    if (!opening) {
      if (this.#options.memory !== false) {
        this.#memory.push(JSON.stringify(stored))
        this.#memoryRuns.push(run)
        this.#memorySeqs.add(stored.seq)
      }
      return
    }
    await (await opening).append(stored, run, stored.seq)
  }

  /** Effects reported after the line of the exchange at `seq` (its place in this recording) was written. */
  async lateEffects(seq: number, effects: readonly StoredEffect[]): Promise<void> {
    if (this.#shared) return
    const opening = this.#open()
    if (!opening) {
      // Its line is held (not forgotten, and kept at all: a flight recorder keeps none).
      if (this.#memorySeqs.has(seq)) this.#late.set(seq, [...(this.#late.get(seq) ?? []), ...effects])
      return
    }
    await (await opening).lateEffects(seq, effects)
  }

  /**
   * Bodies cut at the body limit so far, per route. With a shared store, after `finish()`: those
   * of the cassette written, every replica's exchanges included.
   */
  get cutBodies(): CutBodies {
    return this.#shared?.written ?? this.#cut.summary()
  }

  /** With a shared store, after `finish()`: other replicas still record into this cassette, and the last to stop writes it. */
  get leftToOthers(): { others: number } | null {
    return this.#shared?.leftToOthers ?? null
  }

  /** After `finish()`: nothing was recorded and the cassette file already there was left as it was. */
  get keptPrevious(): boolean {
    return this.#keptPrevious
  }

  /** Bytes of cassette lines this recording wrote to its files (not counting body files). */
  async bytesWritten(): Promise<number> {
    return (await this.#parts?.catch(() => null))?.written ?? 0
  }

  #schedule(): void {
    this.#timer = setTimeout(() => {
      this.#timer = null
      void this.checkpoint().finally(() => {
        if (!this.#finished) this.#schedule()
      })
    }, this.#options.checkpointMs ?? 1000)
    this.#timer.unref()
  }

  /**
   * Append what changed since the last checkpoint (claims, the rules), then make it durable: body
   * files, then the cassette. A failure (a full disk, for a moment) is retried at the next one;
   * `finish()` reports its own.
   */
  checkpoint(): Promise<void> {
    this.#checkpointing ??= (async () => {
      try {
        await this.#shared?.beat()
        const parts = await this.#parts
        if (parts) await parts.checkpoint(...this.#changes())
      } catch {
        // the next checkpoint, or finish(), tries again
      } finally {
        this.#checkpointing = null
      }
    })()
    return this.#checkpointing
  }

  /** The settings now, each run's claims, and whether a run's claims changed since they were last written. */
  #changes(): [SegmentSettings, Map<string, Array<Omit<CassetteClaim, 'run'>>>, (run: string, claims: string) => boolean] {
    const header = this.#options.header(0)
    const byRun = new Map<string, Array<Omit<CassetteClaim, 'run'>>>()
    for (const { run, ...claim } of header.claims ?? []) byRun.set(run, [...(byRun.get(run) ?? []), claim])
    const changed = (run: string, text: string): boolean => {
      if (this.#claimsWritten.get(run) === text) return false
      this.#claimsWritten.delete(run)
      this.#claimsWritten.set(run, text)
      if (this.#claimsWritten.size > CLAIMS_REMEMBERED) this.#claimsWritten.delete(this.#claimsWritten.keys().next().value as string)
      return true
    }
    return [settingsOf(header), byRun, changed]
  }

  /** Stop checkpoints (one running still ends). */
  stopCheckpoints(): void {
    this.#finished = true
    if (this.#timer) clearTimeout(this.#timer)
  }

  /** Finish the cassette: with a file, its last claims and its end line; with a shared store, the merged cassette. */
  async finish(): Promise<void> {
    this.stopCheckpoints()
    await this.#checkpointing
    const { file } = this.#options
    if (!file) return
    try {
      if (this.#shared) {
        await this.#shared.writeTo(file)
        return
      }
      const parts = await (this.#open() as Promise<CassetteParts>)
      await parts.close(...this.#changes())
      this.#complete = true
      this.#keptPrevious = parts.untouched
      // A replaced cassette's body files no line refers to any more.
      await parts.sweepReplaced()
    } catch (error) {
      if (error instanceof ToolstormError) throw error
      const code = (error as NodeJS.ErrnoException).code ?? String(error)
      throw new ToolstormError('ERR_FILE_UNWRITABLE', `Failed to write the cassette ${file}: ${code}. ${this.#shared ? 'Redis holds every exchange: write it with toolstorm report --state URL --cassette FILE.' : 'Every exchange appended before this is in the file.'}`, { cause: error })
    }
  }

  /**
   * Drop the lines of `run` (in memory only; a file or a shared store keeps every exchange): how
   * many there were, or null when this writer cannot.
   */
  forget(run: string): number | null {
    if (this.#shared || this.#options.file) return null
    let kept = 0
    for (let index = 0; index < this.#memory.length; index++) {
      if (this.#memoryRuns[index] === run) {
        const { seq } = JSON.parse(this.#memory[index] as string) as CassetteExchange
        this.#late.delete(seq)
        this.#memorySeqs.delete(seq)
        continue
      }
      this.#memory[kept] = this.#memory[index] as string
      this.#memoryRuns[kept] = this.#memoryRuns[index] as string
      kept++
    }
    const dropped = this.#memory.length - kept
    this.#memory.length = kept
    this.#memoryRuns.length = kept
    if (dropped) this.#forgot = true
    return dropped
  }

  /** Release the file without finishing it (its lines so far stay, valid; a new file with none is removed). */
  async dispose(): Promise<void> {
    this.stopCheckpoints()
    const parts = await this.#parts?.catch(() => null)
    await parts?.dispose().catch(() => undefined)
    // A recording that never started (its proxy could not listen) leaves no empty cassette behind.
    if (parts && !this.#complete && parts.start.action === 'created' && parts.count === 0) for (const file of parts.files) await rm(file, { force: true })
    await this.#shared?.dispose()
  }

  /**
   * One run's exchanges kept so far (with a file: read off it as `extract` does, scanning the other
   * runs' lines, so a long recording answers one run quickly), or null without a file.
   */
  async cassetteOfRun(run: string): Promise<Cassette | null> {
    const opening = this.#open()
    if (!opening || !this.#options.file) return null
    await (await opening).flush()
    return extractRuns(this.#options.rotation ? indexFileFor(this.#options.file) : this.#options.file, { runs: [run] })
  }

  /** The cassette kept so far, in memory, every body inline (with a file: the whole file, earlier segments included). */
  async cassette(): Promise<Cassette> {
    // Every replica's exchanges, under the header the store assembles (with the claims it holds).
    if (this.#shared) return this.#shared.assemble()
    const opening = this.#open()
    if (opening) {
      const parts = await opening
      await parts.flush()
      if (parts.files.length === 1) return Cassette.load(parts.files[0] as string)
      // Rotated: this recording's parts as one cassette (a run continued in the next part keeps its call ids).
      const loaded = await Promise.all(parts.files.map((file) => Cassette.load(file)))
      const exchanges = loaded.flatMap((cassette) => cassette.exchanges).map((exchange, index) => ({ ...exchange, seq: index + 1 }))
      const { version: _v, kind: _k, exchanges: _n, ...header } = (loaded.at(-1) as Cassette).header
      return Cassette.from({ ...header, claims: loaded.flatMap((cassette) => cassette.header.claims ?? []) }, exchanges, parts.currentFile)
    }
    const exchanges = this.#memory.map((line, index) => {
      const exchange = JSON.parse(line) as CassetteExchange
      const late = this.#late.get(exchange.seq)
      const whole = late ? { ...exchange, effects: [...exchange.effects, ...late] } : exchange
      // With a run forgotten the kept lines number on without gaps.
      return this.#forgot ? { ...whole, seq: index + 1 } : whole
    })
    return Cassette.from(this.#options.header(exchanges.length), exchanges, '<recording>')
  }
}
