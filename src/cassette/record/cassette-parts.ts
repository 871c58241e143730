/**
 * Where a recorder's lines go on disk: one cassette file, or (rotation) a series of parts
 * `STEM-0001.jsonl`, `STEM-0002.jsonl`, … with an index `STEM.index.jsonl` saying where each run is.
 *
 * Rotation has no gap: the next part is opened (its header written atomically) before any line
 * goes to it, in the same process. It does not split runs silently: a run with an exchange in the
 * last `runIdleMs` keeps going to the part it started in until it goes idle (at most `drainMs`);
 * the runs still active then continue in the next part, and the index says so (`continues`).
 * `keep` bounds the parts on disk: the oldest are deleted, each with an index line.
 *
 * The index is append-only JSON Lines, like the parts: `{"part","opened"}` when a part starts,
 * `{"part","closed","exchanges","bytes","runs":[{run, exchanges, first, last, continues?, from?}]}`
 * when it is closed, `{"part","deleted","reason"}`. A part opened and never closed (a `kill -9`)
 * is read for its runs instead.
 * @see ../../../docs/incidents.md#rotation
 */
import { promises as fs } from 'node:fs'
import path from 'node:path'
import { ToolstormError } from '../../errors.js'
import type { CassetteClaim, CassetteHeader, SegmentSettings, StoredEffect } from '../format/cassette-schema.js'
import { BodyFileWriter, bodiesFolderFor } from '../format/body-files.js'
import { CassetteAppender } from './cassette-appender.js'
import type { RecordingStart } from './open-cassette-file.js'
import { indexFileFor, partFileFor, type IndexLine, type PartRun } from '../format/parts-index.js'

export { indexFileFor, partFileFor, type IndexLine, type PartRun } from '../format/parts-index.js'

export interface RotationOptions {
  /** Start a new part once the current one holds this many bytes of lines. */
  readonly maxBytes?: number | undefined
  /** Start a new part after this many milliseconds. */
  readonly everyMs?: number | undefined
  /** Parts kept on disk at most (the oldest deleted first). Default: all. */
  readonly keep?: number | undefined
  /** A run with no exchange for this long is done with the part it is in (default 30 s). */
  readonly runIdleMs?: number | undefined
  /** The most a part stays open for its active runs after the next one started (default 10 × runIdleMs). */
  readonly drainMs?: number | undefined
}

/** What the parts writer follows of a run in a part (not in the index). */
interface RunState extends PartRun {
  lastAt: number
  /** The run's last call id and per-route ordinals here: where it resumes in the next part. */
  lastCall: number
  ordinals: Record<string, number>
}

interface Part {
  readonly file: string
  readonly appender: CassetteAppender
  readonly bodies: BodyFileWriter
  readonly opened: number
  /** Exchanges of each run in this part, and when each last had one. */
  readonly runs: Map<string, RunState>
  /** Rotation began: only runs still active here get lines. */
  draining: number | null
  closed: boolean
}

const PART_NUMBER = /-(\d{4,})\.jsonl$/i

/** Exchanges whose line is written, remembered for effects reported late (as the capture does). */
const LATE_EFFECT_WINDOW = 4096

export class CassetteParts {
  readonly #file: string
  readonly #header: (count: number) => CassetteHeader
  readonly #overwrite: boolean
  readonly #rotation: RotationOptions | null
  readonly #parts: Part[] = []
  /** Where each exchange's line went, by its place in this recording (for effects reported late). */
  readonly #placed = new Map<number, { part: Part; seq: number }>()
  /** Which part a run's lines go to while it is active in a draining one. */
  #current!: Part
  #number = 0
  #start!: RecordingStart
  #tail: Promise<void> = Promise.resolve()
  /** Parts deleted to honour `keep`. */
  deleted = 0

  private constructor(file: string, header: (count: number) => CassetteHeader, overwrite: boolean, rotation: RotationOptions | null) {
    this.#file = file
    this.#header = header
    this.#overwrite = overwrite
    this.#rotation = rotation
  }

  /** Open the file (or, with rotation, the last part, or the first). */
  static async open(file: string, header: (count: number) => CassetteHeader, options: { overwrite?: boolean; rotation?: RotationOptions | null } = {}): Promise<CassetteParts> {
    const parts = new CassetteParts(file, header, options.overwrite ?? false, options.rotation ?? null)
    await parts.#openFirst()
    return parts
  }

  get start(): RecordingStart {
    return this.#start
  }

  /** The file lines go to now. */
  get currentFile(): string {
    return this.#current.file
  }

  /** Every part file this recording wrote to, in order. */
  get files(): string[] {
    return this.#parts.map((part) => part.file)
  }

  /** Exchanges this recording appended, over every part. */
  get count(): number {
    return this.#parts.reduce((sum, part) => sum + part.appender.count, 0)
  }

  /** Bytes of lines this recording wrote, over every part. */
  get written(): number {
    return this.#parts.reduce((sum, part) => sum + part.appender.written, 0)
  }

  /** Whether this recording appended nothing to an existing cassette. */
  get untouched(): boolean {
    return this.#parts.length === 1 && (this.#parts[0] as Part).appender.untouched
  }

  async #openFirst(): Promise<void> {
    if (!this.#rotation) {
      const part = await this.#openPart(this.#file, this.#overwrite)
      this.#start = part.appender.start
      return
    }
    // The last part there is continued (a restart), unless it is full.
    const existing = await this.#existingParts()
    const last = existing.at(-1)
    let number = last?.number ?? 1
    if (last && this.#overwrite) {
      for (const { file } of existing) await this.#deleteFiles(file)
      number = 1
    } else if (last && this.#rotation.maxBytes !== undefined && last.size >= this.#rotation.maxBytes) number++
    const part = await this.#openPart(partFileFor(this.#file, number), false)
    this.#number = number
    this.#start = part.appender.start
    if (part.appender.start.action !== 'appended') await this.#index({ part: path.basename(part.file), opened: new Date().toISOString() })
  }

  async #existingParts(): Promise<Array<{ file: string; number: number; size: number }>> {
    const folder = path.dirname(path.resolve(this.#file))
    const stem = path.basename(this.#file).replace(/\.jsonl$/i, '')
    let names: string[]
    try {
      names = await fs.readdir(folder)
    } catch {
      return []
    }
    const parts = []
    for (const name of names) {
      const match = PART_NUMBER.exec(name)
      if (!match || name !== `${stem}-${match[1]}.jsonl`) continue
      const file = path.join(folder, name)
      parts.push({ file, number: Number(match[1]), size: (await fs.stat(file)).size })
    }
    return parts.sort((a, b) => a.number - b.number)
  }

  async #openPart(file: string, overwrite: boolean): Promise<Part> {
    const appender = await CassetteAppender.open(file, this.#header(0), { overwrite })
    const part: Part = { file, appender, bodies: new BodyFileWriter(bodiesFolderFor(file)), opened: Date.now(), runs: new Map(), draining: null, closed: false }
    this.#parts.push(part)
    this.#current = part
    return part
  }

  /** Serialises what changes the parts (rotation, closing) with the lines that go to them. */
  #queue<T>(task: () => Promise<T>): Promise<T> {
    const run = this.#tail.then(task)
    this.#tail = run.then(
      () => undefined,
      () => undefined,
    )
    return run
  }

  /** The part a run's line goes to: the one it is active in while that one drains, else the current one. */
  #partFor(run: string, now: number): Part {
    const idle = this.#rotation?.runIdleMs ?? 30_000
    for (const part of this.#parts) {
      if (part.draining === null || part.closed) continue
      const active = part.runs.get(run)
      if (active && now - active.lastAt < idle) return part
    }
    return this.#current
  }

  /** Append one exchange (`position`: its place in this recording); its `seq` is given here, per part. */
  append(exchange: Parameters<BodyFileWriter['exchange']>[0], run: string, position: number): Promise<void> {
    return this.#queue(async () => {
      await this.#rotateIfDue()
      const now = Date.now()
      const part = this.#partFor(run, now)
      const seq = part.appender.after + part.appender.count + 1
      let runs = part.runs.get(run)
      if (!runs) {
        // The part the run was last in: its calls resume here where they stopped there.
        const earlier = [...this.#parts].reverse().find((other) => other !== part && other.runs.has(run))
        const before = earlier?.runs.get(run)
        part.runs.set(run, (runs = { run, exchanges: 0, first: seq, last: seq, lastAt: now, lastCall: before?.lastCall ?? 0, ordinals: { ...before?.ordinals }, ...(earlier ? { from: path.basename(earlier.file) } : {}) }))
        if (earlier && before) {
          before.continues ??= path.basename(part.file)
          if (before.lastCall > 0 && exchange.call !== 1) await part.appender.continues({ run, from: path.basename(earlier.file), calls: before.lastCall, ordinals: before.ordinals })
        }
      }
      const line = await part.bodies.exchange({ ...exchange, seq })
      await part.appender.append(JSON.stringify(line))
      runs.exchanges++
      runs.last = seq
      runs.lastAt = now
      if (exchange.call !== null && exchange.ordinal !== null) {
        runs.lastCall = exchange.call
        runs.ordinals[exchange.route] = exchange.ordinal
      }
      this.#placed.set(position, { part, seq })
      if (this.#placed.size > LATE_EFFECT_WINDOW) this.#placed.delete(this.#placed.keys().next().value as number)
    })
  }

  /** Effects reported late for the exchange at `position` in this recording. */
  lateEffects(position: number, effects: readonly StoredEffect[]): Promise<void> {
    return this.#queue(async () => {
      const placed = this.#placed.get(position)
      if (!placed || placed.part.closed) return
      await placed.part.appender.effects(placed.seq, effects)
    })
  }

  /** The part a run's claims go to: the last one holding its exchanges, else the current one. */
  #claimsPart(run: string): Part {
    for (let index = this.#parts.length - 1; index >= 0; index--) {
      const part = this.#parts[index] as Part
      if (part.runs.has(run)) return part
    }
    return this.#current
  }

  /**
   * Close parts that drained, append the settings and each run's claims that
   * `changed` says changed (to the part holding the run), then make every open part durable.
   */
  checkpoint(settings: SegmentSettings, claims: ReadonlyMap<string, Array<Omit<CassetteClaim, 'run'>>>, changed: (run: string, claims: string) => boolean): Promise<void> {
    return this.#queue(async () => {
      // A new part is only started for a line to put in it (no empty parts): here, drained ones close.
      await this.#closeDrained(false)
      for (const part of this.#parts) if (!part.closed && part.appender.count > 0) await part.appender.settings(settings)
      for (const [run, list] of claims) {
        const part = this.#claimsPart(run)
        if (part.closed || part.appender.count === 0 || !changed(run, JSON.stringify(list))) continue
        await part.appender.claims(run, list)
      }
      for (const part of this.#parts) {
        if (part.closed) continue
        await part.bodies.sync()
        await part.appender.sync()
      }
    })
  }

  async #rotateIfDue(): Promise<void> {
    const rotation = this.#rotation
    const current = this.#current
    if (!rotation || current.appender.count === 0) return
    const full = rotation.maxBytes !== undefined && current.appender.size >= rotation.maxBytes
    const old = rotation.everyMs !== undefined && Date.now() - current.opened >= rotation.everyMs
    if (!full && !old) return
    // The next part exists (header written atomically) before the old one stops taking new runs: no gap.
    this.#number++
    const next = await this.#openPart(partFileFor(this.#file, this.#number), false)
    await this.#index({ part: path.basename(next.file), opened: new Date().toISOString() })
    current.draining = Date.now()
    await this.#closeDrained(false)
  }

  /** Close draining parts whose runs all went idle (or that drained long enough; `all`: every one). */
  async #closeDrained(all: boolean): Promise<void> {
    const idle = this.#rotation?.runIdleMs ?? 30_000
    const drain = this.#rotation?.drainMs ?? idle * 10
    const now = Date.now()
    for (const part of this.#parts) {
      if (part.closed || (part.draining === null && !all)) continue
      const active = [...part.runs.values()].some((run) => now - run.lastAt < idle)
      if (!all && active && now - (part.draining as number) < drain) continue
      part.closed = true
      await part.appender.close(true)
      if (this.#rotation) {
        const runs = [...part.runs.values()].map(({ lastAt: _at, lastCall: _call, ordinals: _ordinals, ...run }) => run)
        await this.#index({ part: path.basename(part.file), closed: new Date().toISOString(), exchanges: part.appender.after + part.appender.count, bytes: part.appender.size, runs })
      }
    }
    await this.#honourKeep()
  }

  async #honourKeep(): Promise<void> {
    const keep = this.#rotation?.keep
    if (keep === undefined) return
    const existing = await this.#existingParts()
    const open = new Set(this.#parts.filter((part) => !part.closed).map((part) => path.resolve(part.file)))
    for (const { file } of existing.slice(0, Math.max(0, existing.length - keep))) {
      if (open.has(path.resolve(file))) continue
      await this.#deleteFiles(file)
      this.deleted++
      await this.#index({ part: path.basename(file), deleted: new Date().toISOString(), reason: `keep ${keep} parts (--rotate-keep)` })
    }
  }

  async #deleteFiles(file: string): Promise<void> {
    await fs.rm(file, { force: true })
    await fs.rm(bodiesFolderFor(file), { recursive: true, force: true })
  }

  async #index(line: IndexLine): Promise<void> {
    try {
      await fs.appendFile(indexFileFor(this.#file), JSON.stringify(line) + '\n', { mode: 0o600 })
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? String(error)
      throw new ToolstormError('ERR_FILE_UNWRITABLE', `Failed to write the index ${indexFileFor(this.#file)}: ${code}. The parts themselves are complete cassettes.`, { cause: error })
    }
  }

  /** Close every part: the last claims and settings, then end lines (and the index's closing lines). */
  close(settings: SegmentSettings, claims: ReadonlyMap<string, Array<Omit<CassetteClaim, 'run'>>>, changed: (run: string, claims: string) => boolean): Promise<void> {
    return this.checkpoint(settings, claims, changed).then(() =>
      this.#queue(async () => {
        await this.#closeDrained(true)
      }),
    )
  }

  /** Release every part without an end line (what was written stays, valid). */
  dispose(): Promise<void> {
    return this.#queue(async () => {
      for (const part of this.#parts) if (!part.closed) await part.appender.close(false).catch(() => undefined)
    })
  }

  /** Wait for what was queued, then make it durable. */
  flush(): Promise<void> {
    return this.#queue(async () => {
      for (const part of this.#parts) if (!part.closed) await part.appender.sync()
    })
  }

  /** After close: body files no line of a replaced cassette refers to any more. */
  async sweepReplaced(): Promise<void> {
    if (this.#start.action === 'replaced' && !this.#rotation) await this.#parts[0]?.bodies.sweep()
  }
}
