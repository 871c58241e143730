/**
 * Where a recorder keeps exchange lines until it writes the cassette: in memory, or in an
 * append-only journal file next to the cassette (so a long recording does not grow the heap).
 *
 * The journal is never the cassette: the cassette file is only ever replaced atomically by a
 * complete snapshot (header + the journal's complete lines). After a `kill -9`, the cassette is
 * the last snapshot and the journal is left over (`.NAME.toolstorm-journal`); it can be deleted.
 */
import { promises as fs } from 'node:fs'
import path from 'node:path'
import { StateError, ToolstormError } from '../../errors.js'
import { readJsonLines } from '../../io/read-json-lines.js'
import { writeLinesAtomic, type WriteLinesOptions } from '../../io/write-lines-atomic.js'

export interface LineStore {
  /** Lines appended so far. */
  readonly count: number
  /** `run`: the run the exchange belongs to (the shared store keeps one stream per run). */
  append(line: string, run?: string): Promise<void>
  /**
   * Write `header` then every line (patched by `patch` when given) to `target`, atomically;
   * `beforeRename` runs before the new file replaces the target (body files are made durable).
   */
  writeTo(target: string, header: string, patch?: (line: string) => string, beforeRename?: WriteLinesOptions['beforeRename']): Promise<void>
  /** Every line, in order. */
  lines(): AsyncIterable<string>
  /**
   * Drop the lines of `run`; how many there were. Only the memory store can: a journal is
   * append-only, and a shared store is every replica's.
   */
  forget?(run: string): number
  dispose(): Promise<void>
}

export class MemoryLineStore implements LineStore {
  readonly #lines: string[] = []
  /** The run of each line (same index). */
  readonly #runs: Array<string | undefined> = []

  get count(): number {
    return this.#lines.length
  }

  async append(line: string, run?: string): Promise<void> {
    this.#lines.push(line)
    this.#runs.push(run)
  }

  forget(run: string): number {
    let kept = 0
    for (let index = 0; index < this.#lines.length; index++) {
      if (this.#runs[index] === run) continue
      this.#lines[kept] = this.#lines[index]!
      this.#runs[kept] = this.#runs[index]
      kept++
    }
    const dropped = this.#lines.length - kept
    this.#lines.length = kept
    this.#runs.length = kept
    return dropped
  }

  async writeTo(target: string, header: string, patch?: (line: string) => string, beforeRename?: WriteLinesOptions['beforeRename']): Promise<void> {
    const lines = this.#lines
    await writeLinesAtomic(
      target,
      (function* () {
        yield header
        for (const line of lines) yield patch ? patch(line) : line
      })(),
      beforeRename ? { beforeRename } : {},
    )
  }

  async *lines(): AsyncIterable<string> {
    yield* this.#lines
  }

  async dispose(): Promise<void> {
    this.#lines.length = 0
    this.#runs.length = 0
  }
}

/** The journal's path for a cassette file. */
export function journalPathFor(cassette: string): string {
  return path.join(path.dirname(path.resolve(cassette)), `.${path.basename(cassette)}.toolstorm-journal`)
}

export class JournalLineStore implements LineStore {
  readonly file: string
  #handle: fs.FileHandle | null = null
  #count = 0
  #bytes = 0

  private constructor(file: string) {
    this.file = file
  }

  /** Start a fresh journal (a stale one from a killed recorder is overwritten). */
  static async create(file: string): Promise<JournalLineStore> {
    const store = new JournalLineStore(file)
    try {
      await fs.mkdir(path.dirname(file), { recursive: true })
      store.#handle = await fs.open(file, 'w', 0o600)
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? String(error)
      throw new ToolstormError('ERR_FILE_UNWRITABLE', `Failed to start recording: cannot write ${file} (${code}). Record into a folder you can write to.`, { cause: error })
    }
    return store
  }

  get count(): number {
    return this.#count
  }

  async append(line: string): Promise<void> {
    if (!this.#handle) throw new StateError(`Failed to append to the recording journal ${this.file}: it is already closed. Record exchanges only before the recorder is closed.`)
    const bytes = Buffer.from(line + '\n')
    await this.#handle.write(bytes)
    this.#count++
    this.#bytes += bytes.length
  }

  async writeTo(target: string, header: string, patch?: (line: string) => string, beforeRename?: WriteLinesOptions['beforeRename']): Promise<void> {
    const bytes = this.#bytes
    const count = this.#count
    const options = beforeRename ? { beforeRename } : {}
    if (!patch) {
      await writeLinesAtomic(target, [header], { copyFrom: { file: this.file, bytes }, ...options })
      return
    }
    const file = this.file
    await writeLinesAtomic(target, (async function* () {
      yield header
      let n = 0
      for await (const { text } of readJsonLines(file, { maxBytes: Number.MAX_SAFE_INTEGER, maxLineBytes: () => Number.MAX_SAFE_INTEGER, invalidCode: 'ERR_INTERNAL' })) {
        if (n++ >= count) break
        yield patch(text)
      }
    })(), options)
  }

  async *lines(): AsyncIterable<string> {
    let n = 0
    const count = this.#count
    for await (const { text } of readJsonLines(this.file, { maxBytes: Number.MAX_SAFE_INTEGER, maxLineBytes: () => Number.MAX_SAFE_INTEGER, invalidCode: 'ERR_INTERNAL' })) {
      if (n++ >= count) break
      yield text
    }
  }

  async dispose(): Promise<void> {
    await this.#handle?.close().catch(() => undefined)
    this.#handle = null
    await fs.rm(this.file, { force: true })
  }
}
