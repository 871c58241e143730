/**
 * A recorder's cassette file, append-only (cassette version 4): each line is written once, after
 * the ones before it, at the end of the file; nothing is ever rewritten. The file is a valid
 * cassette at every moment: a `kill -9` can only leave its last line without a newline, which
 * readers skip and the next recorder cuts off (open-cassette-file.ts). Lines reach the disk
 * (fsync) about once a second, so a crash of the machine loses at most that much.
 *
 * Writes cost what the traffic costs: the bytes of each line once (and each large body once, in its
 * body file), however large the file grows.
 */
import { promises as fs } from 'node:fs'
import { ToolstormError } from '../../errors.js'
import type { CassetteClaim, CassetteHeader, SegmentSettings, StoredEffect } from '../format/cassette-schema.js'
import type { ContinuesLine, EndLine, SegmentLine } from '../format/segment-lines.js'
import { openCassetteFile, settingsOf, type RecordingStart } from './open-cassette-file.js'

export class CassetteAppender {
  readonly file: string
  readonly start: RecordingStart
  /** Exchanges before this recording's first one. */
  readonly after: number
  readonly #handle: fs.FileHandle
  /** Bytes of complete lines: where the next one goes (a failed write is cut back to it). */
  #size: number
  #count = 0
  /** Written before this recording's first line, when it appends to an existing cassette. */
  #segment: SegmentLine | null
  #settings: string
  #tail: Promise<void> = Promise.resolve()
  #dirty = false
  #closed = false
  /** Bytes written by this recording (lines only; body files count their own). */
  written = 0

  private constructor(file: string, handle: fs.FileHandle, opened: Awaited<ReturnType<typeof openCassetteFile>>, header: CassetteHeader) {
    this.file = file
    this.#handle = handle
    this.start = opened.start
    this.after = opened.after
    this.#size = opened.size
    const settings = settingsOf(header)
    this.#settings = JSON.stringify(settings)
    this.#segment = opened.start.segment > 1 ? { line: 'segment', started: header.recorded, after: opened.after, settings } : null
  }

  /** Get `file` ready (open-cassette-file.ts) and open it for appending. */
  static async open(file: string, header: CassetteHeader, options: { overwrite?: boolean } = {}): Promise<CassetteAppender> {
    const opened = await openCassetteFile(file, header, options)
    let handle
    try {
      handle = await fs.open(file, 'r+')
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? String(error)
      throw new ToolstormError('ERR_FILE_UNWRITABLE', `Failed to start recording: cannot write ${file} (${code}). Record into a folder you can write to.`, { cause: error })
    }
    return new CassetteAppender(file, handle, opened, header)
  }

  /** Exchanges this recording appended. */
  get count(): number {
    return this.#count
  }

  /** Bytes of the file (complete lines). */
  get size(): number {
    return this.#size
  }

  /** Append one exchange's line (its `seq` already counts the exchanges before this recording). */
  append(line: string): Promise<void> {
    return this.#write([line], () => this.#count++)
  }

  /** Effects reported after exchange `seq`'s line was written. */
  effects(seq: number, effects: readonly StoredEffect[]): Promise<void> {
    return this.#write([JSON.stringify({ line: 'effects', seq, effects })])
  }

  /** A run's claims as judged now (a later line for the run replaces this one). */
  claims(run: string, claims: readonly Omit<CassetteClaim, 'run'>[]): Promise<void> {
    return this.#write([JSON.stringify({ line: 'claims', run, claims })])
  }

  /** A run whose earlier calls are in another part goes on here (before its first exchange here). */
  continues(line: Omit<ContinuesLine, 'line'>): Promise<void> {
    return this.#write([JSON.stringify({ line: 'continues', ...line } satisfies ContinuesLine)])
  }

  /** The settings now (`PUT /rules` changed the rules): a settings line when they differ from the last written. */
  settings(settings: SegmentSettings): Promise<void> {
    const text = JSON.stringify(settings)
    if (text === this.#settings) return Promise.resolve()
    this.#settings = text
    return this.#write([JSON.stringify({ line: 'settings', at: new Date().toISOString(), settings })])
  }

  /** Make what was written durable (fsync), when something was. */
  sync(): Promise<void> {
    return this.#queue(async () => {
      if (!this.#dirty || this.#closed) return
      this.#dirty = false
      await this.#handle.datasync()
    })
  }

  /**
   * Close the file. `end`: write the end line (a clean stop) unless this recording appended nothing
   * to an existing cassette, which is then left exactly as it was.
   */
  async close(end: boolean): Promise<void> {
    const untouched = this.start.action === 'appended' && this.#count === 0 && this.#segment !== null
    if (end && !untouched) await this.#write([JSON.stringify({ line: 'end', ended: new Date().toISOString(), exchanges: this.after + this.#count } satisfies EndLine)])
    await this.sync()
    await this.#queue(async () => {
      if (this.#closed) return
      this.#closed = true
      await this.#handle.close()
    })
  }

  /** Whether this recording appended nothing to an existing cassette (the file is as it was). */
  get untouched(): boolean {
    return this.start.action === 'appended' && this.#count === 0 && this.#segment !== null
  }

  #queue(task: () => Promise<void>): Promise<void> {
    const run = this.#tail.then(task)
    this.#tail = run.catch(() => undefined)
    return run
  }

  /** Write whole lines at the end, one after another; a failed write is cut back so the file stays whole. */
  #write(lines: string[], done?: () => void): Promise<void> {
    return this.#queue(async () => {
      if (this.#closed) throw new ToolstormError('ERR_STATE', `Failed to append to the cassette ${this.file}: the recorder is closed. Record exchanges only before it is closed.`)
      const segment = this.#segment
      const bytes = Buffer.from((segment ? JSON.stringify(segment) + '\n' : '') + lines.join('\n') + '\n')
      try {
        let offset = 0
        while (offset < bytes.length) offset += (await this.#handle.write(bytes, offset, bytes.length - offset, this.#size + offset)).bytesWritten
      } catch (error) {
        // A short write (a full disk) would leave half a line that the next one runs into.
        await this.#handle.truncate(this.#size).catch(() => undefined)
        const code = (error as NodeJS.ErrnoException).code ?? String(error)
        throw new ToolstormError('ERR_FILE_UNWRITABLE', `Failed to append to the cassette ${this.file}: ${code}. The exchanges before it are in the file.`, { cause: error })
      }
      this.#segment = null
      this.#size += bytes.length
      this.written += bytes.length
      this.#dirty = true
      done?.()
    })
  }
}
