/**
 * The incidents folder (`--incidents DIR`): each kept run is one small cassette `NAME.jsonl` (with
 * its `NAME.bodies/` when a body was large) and its report `NAME.report.json`, plus one line in
 * `DIR/index.jsonl`. Disk is bounded: past `maxIncidents` or `maxBytes` the oldest incidents are
 * deleted first, each with an `evicted` line in the index, and counted.
 *
 * Every file is written atomically (temporary file, fsync, rename), the cassette and its body files
 * before the report, the report before the index line: a `kill -9` at any point leaves complete
 * files, and an incident whose index line was never written is indexed when the folder is opened
 * again (`recovered`), so the bound counts it.
 * @see ../../docs/incidents.md
 */
import { promises as fs } from 'node:fs'
import path from 'node:path'
import { ToolstormError } from '../errors.js'
import { bodiesFolderFor } from '../cassette/format/body-files.js'
import type { Cassette } from '../cassette/format/cassette.js'
import { acquirePidLock } from '../io/pid-lock.js'
import { readJsonLines } from '../io/read-json-lines.js'
import { writeFileAtomic } from '../io/write-file-atomic.js'
import { writeLinesAtomic } from '../io/write-lines-atomic.js'
import type { IncidentTrigger } from './incident-triggers.js'

/** One kept run, as its index line says. */
export interface IncidentEntry {
  /** The cassette, in DIR (`NAME.jsonl`); its report is `NAME.report.json`. */
  readonly incident: string
  readonly run: string
  /** Why it was kept, each reason once, in the order seen. */
  readonly why: readonly string[]
  /** What showed it (a call and a status, an effect key), at most 20. */
  readonly detail: readonly string[]
  /** When it was written (ISO 8601). */
  readonly at: string
  readonly calls: number
  readonly exchanges: number
  readonly routes: readonly string[]
  /** Bytes on disk (cassette, bodies and report). */
  readonly bytes: number
  /** Exchanges of the run left out of the window (its earliest ones). */
  readonly dropped: number
  /** Indexed when the folder was opened again: its index line had not been written (a kill -9). */
  readonly recovered?: true
}

/** An incident's evicted line. */
export interface EvictedEntry {
  readonly evicted: string
  readonly run: string
  readonly at: string
  readonly reason: string
}

export interface IncidentStoreOptions {
  /** Incidents kept at most (default 1,000). */
  readonly maxIncidents?: number | undefined
  /** Bytes the incidents may take at most (default 1 GiB). */
  readonly maxBytes?: number | undefined
}

export const DEFAULT_MAX_INCIDENTS = 1000
export const DEFAULT_MAX_INCIDENT_BYTES = 1024 ** 3
const INDEX = 'index.jsonl'
/** Held while the folder is read and written (io/pid-lock.ts); skipped as a dotfile. */
const LOCK = '.lock'
const LOCK_WAIT_MS = 60_000
const CASSETTE = /^(.+)\.jsonl$/

async function sizeOf(file: string): Promise<number> {
  try {
    const stat = await fs.stat(file)
    if (!stat.isDirectory()) return stat.size
    let total = 0
    for (const name of await fs.readdir(file)) total += await sizeOf(path.join(file, name))
    return total
  } catch {
    return 0
  }
}

export class IncidentStore {
  readonly dir: string
  readonly maxIncidents: number
  readonly maxBytes: number
  /** Kept incidents, oldest first. */
  readonly #kept: IncidentEntry[] = []
  #bytes = 0
  /** Incidents deleted for the bound, since the folder was created. */
  evicted = 0
  /** Runs not kept because their incident alone was over `maxBytes`. */
  tooLarge = 0
  #indexLines = 0
  /** The index as this store left it, when it last released the folder (`#indexStamp`). */
  #lastStamp: string | null = null
  #tail: Promise<void> = Promise.resolve()

  private constructor(dir: string, options: IncidentStoreOptions) {
    this.dir = dir
    this.maxIncidents = options.maxIncidents ?? DEFAULT_MAX_INCIDENTS
    this.maxBytes = options.maxBytes ?? DEFAULT_MAX_INCIDENT_BYTES
  }

  /** Open DIR (created if missing): read its index, index what a kill left unindexed, and honour the bounds. */
  static async open(dir: string, options: IncidentStoreOptions = {}): Promise<IncidentStore> {
    const store = new IncidentStore(dir, options)
    try {
      await fs.mkdir(dir, { recursive: true, mode: 0o700 })
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? String(error)
      throw new ToolstormError('ERR_FILE_UNWRITABLE', `Failed to keep incidents in ${dir}: ${code}. Give --incidents a folder you can write to.`, { cause: error })
    }
    await store.#locked(async () => {
      await store.#load(true)
      await store.#bound()
    })
    return store
  }

  /**
   * Run `task` holding the folder's lock, so processes sharing the folder (pytest-xdist workers,
   * vitest files) keep one index and one bound: each reads what the others wrote first.
   */
  async #locked<T>(task: () => Promise<T>): Promise<T> {
    const release = await acquirePidLock(path.join(this.dir, LOCK), {
      waitMs: LOCK_WAIT_MS,
      locked: (owner) => new ToolstormError('ERR_STATE_LOCKED', `Failed to keep an incident in ${this.dir}: another process (pid ${owner}) has held the folder for ${LOCK_WAIT_MS / 1000} s.`),
      unwritable: (error) => new ToolstormError('ERR_FILE_UNWRITABLE', `Failed to keep incidents in ${this.dir}: ${(error as NodeJS.ErrnoException).code ?? String(error)}. Give --incidents a folder you can write to.`, { cause: error }),
    })
    try {
      const result = await task()
      this.#lastStamp = await this.#indexStamp()
      return result
    } catch (error) {
      this.#lastStamp = null
      throw error
    } finally {
      release()
    }
  }

  /** Kept incidents, oldest first. */
  get incidents(): readonly IncidentEntry[] {
    return this.#kept
  }

  /** Bytes the kept incidents take. */
  get bytes(): number {
    return this.#bytes
  }

  /** Whether an incident of `run` is kept (by this process or an earlier one). */
  has(run: string): boolean {
    return this.#kept.some((entry) => entry.run === run)
  }

  /**
   * Read the index (what every process sharing the folder kept and evicted); with `recover`, index
   * the incidents a kill left unindexed (only at open: under the lock, none is being written).
   */
  async #load(recover: boolean): Promise<void> {
    const index = path.join(this.dir, INDEX)
    const kept = new Map<string, IncidentEntry>()
    this.#kept.length = 0
    this.#bytes = 0
    this.#indexLines = 0
    this.evicted = 0
    try {
      for await (const { text } of readJsonLines(index, { maxBytes: Number.MAX_SAFE_INTEGER, maxLineBytes: () => 1024 * 1024, invalidCode: 'ERR_JSON_INVALID', partialLastLine: () => true })) {
        this.#indexLines++
        let line: Partial<IncidentEntry & EvictedEntry & { compacted: string; evictedTotal: number }>
        try {
          line = JSON.parse(text) as typeof line
        } catch {
          continue
        }
        if (typeof line.incident === 'string') kept.set(line.incident, line as IncidentEntry)
        else if (typeof line.evicted === 'string') {
          kept.delete(line.evicted)
          this.evicted++
        } else if (typeof line.evictedTotal === 'number') this.evicted = line.evictedTotal
      }
    } catch (error) {
      if ((error as ToolstormError).code !== 'ERR_FILE_UNREADABLE') throw error
    }
    // Files the index does not name: written before a kill took the index line. Indexed now.
    const names = await fs.readdir(this.dir)
    const present = new Set(names)
    for (const name of recover ? names.sort() : []) {
      const match = CASSETTE.exec(name)
      if (!match || name === INDEX || kept.has(name) || name.startsWith('.')) continue
      const entry: IncidentEntry = { incident: name, run: match[1] as string, why: ['recovered'], detail: [], at: new Date().toISOString(), calls: 0, exchanges: 0, routes: [], bytes: await this.#sizeOfIncident(name), dropped: 0, recovered: true }
      kept.set(name, entry)
      await this.#appendIndex(entry)
    }
    for (const entry of kept.values()) {
      // An indexed incident whose files are gone (deleted by hand) no longer counts.
      if (!present.has(entry.incident)) continue
      this.#kept.push(entry)
      this.#bytes += entry.bytes
    }
  }

  async #sizeOfIncident(name: string): Promise<number> {
    const file = path.join(this.dir, name)
    return (await sizeOf(file)) + (await sizeOf(bodiesFolderFor(file))) + (await sizeOf(reportFileOf(file)))
  }

  /** A file name for an incident of `run` (or what it is labelled): when, then the run (letters, digits, `.`, `_`, `-`). */
  #nameFor(run: string): string {
    const stamp = new Date().toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z')
    const base = `${stamp}-${run.replace(/[^\w.-]/g, '_').slice(0, 100)}`
    let name = `${base}.jsonl`
    for (let n = 2; this.#kept.some((entry) => entry.incident === name); n++) name = `${base}-${n}.jsonl`
    return name
  }

  /**
   * Keep one run: its cassette (and body files), then its report, then its index line; then honour
   * the bounds (the oldest first). Null when the incident alone is over `maxBytes` (counted).
   */
  keep(run: string, cassette: Cassette, report: unknown, triggers: readonly IncidentTrigger[], dropped: number, label: string = run): Promise<IncidentEntry | null> {
    const task = this.#tail.then(() => this.#locked(() => this.#keep(run, cassette, report, triggers, dropped, label)))
    this.#tail = task.then(
      () => undefined,
      () => undefined,
    )
    return task
  }

  async #keep(run: string, cassette: Cassette, report: unknown, triggers: readonly IncidentTrigger[], dropped: number, label: string): Promise<IncidentEntry | null> {
    // What the other processes sharing the folder kept and evicted since (if one wrote the index since this one did).
    if (!(await this.#indexUnchanged())) await this.#load(false)
    const name = this.#nameFor(label)
    const file = path.join(this.dir, name)
    try {
      await cassette.save(file)
      await writeFileAtomic(reportFileOf(file), JSON.stringify(report, null, 2) + '\n')
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? String(error)
      throw new ToolstormError('ERR_FILE_UNWRITABLE', `Failed to keep the incident of run "${run}" in ${this.dir}: ${code}.`, { cause: error })
    }
    const bytes = await this.#sizeOfIncident(name)
    if (bytes > this.maxBytes) {
      await this.#delete(name)
      this.tooLarge++
      await this.#appendIndex({ evicted: name, run, at: new Date().toISOString(), reason: `its ${bytes} bytes alone are over --max-bytes ${this.maxBytes}` })
      return null
    }
    const why = [...new Set(triggers.map((trigger) => trigger.why))]
    const routes = [...new Set(cassette.exchanges.map((exchange) => exchange.route))].slice(0, 100)
    const calls = cassette.exchanges.filter((exchange) => exchange.call !== null).length
    const entry: IncidentEntry = { incident: name, run, why, detail: triggers.slice(0, 20).map((trigger) => trigger.detail), at: new Date().toISOString(), calls, exchanges: cassette.exchanges.length, routes, bytes, dropped }
    await this.#appendIndex(entry)
    this.#kept.push(entry)
    this.#bytes += bytes
    await this.#bound()
    return entry
  }

  /** Delete the oldest incidents until both bounds hold. */
  async #bound(): Promise<void> {
    while (this.#kept.length > this.maxIncidents || (this.#bytes > this.maxBytes && this.#kept.length > 0)) {
      const oldest = this.#kept.shift() as IncidentEntry
      this.#bytes -= oldest.bytes
      await this.#delete(oldest.incident)
      this.evicted++
      const reason = this.#kept.length + 1 > this.maxIncidents ? `--max-incidents ${this.maxIncidents}` : `--max-bytes ${this.maxBytes}`
      await this.#appendIndex({ evicted: oldest.incident, run: oldest.run, at: new Date().toISOString(), reason })
    }
    // The index is append-only; once it holds far more lines than incidents, it is rewritten (atomically) to what is kept.
    if (this.#indexLines > 4 * (this.maxIncidents + 100)) await this.#compact()
  }

  async #delete(name: string): Promise<void> {
    const file = path.join(this.dir, name)
    await fs.rm(reportFileOf(file), { force: true })
    await fs.rm(bodiesFolderFor(file), { recursive: true, force: true })
    await fs.rm(file, { force: true })
  }

  /** Whether the index is as this store last left it (same file, same size): no other process wrote it since. */
  async #indexUnchanged(): Promise<boolean> {
    const stamp = await this.#indexStamp()
    return stamp !== null && stamp === this.#lastStamp
  }

  async #indexStamp(): Promise<string | null> {
    try {
      const { ino, size } = await fs.stat(path.join(this.dir, INDEX))
      return `${ino}:${size}`
    } catch {
      return null
    }
  }

  async #appendIndex(line: IncidentEntry | EvictedEntry): Promise<void> {
    await fs.appendFile(path.join(this.dir, INDEX), JSON.stringify(line) + '\n', { mode: 0o600 })
    this.#indexLines++
  }

  async #compact(): Promise<void> {
    const lines = [JSON.stringify({ compacted: new Date().toISOString(), evictedTotal: this.evicted }), ...this.#kept.map((entry) => JSON.stringify(entry))]
    await writeLinesAtomic(path.join(this.dir, INDEX), lines)
    this.#indexLines = lines.length
  }

  /** Wait for incidents being written. */
  flush(): Promise<void> {
    return this.#tail
  }
}

/** The report beside an incident's cassette. */
export function reportFileOf(cassette: string): string {
  return cassette.replace(/\.jsonl$/, '') + '.report.json'
}
