/**
 * Write a JSON Lines file atomically without building one giant string: lines are streamed into
 * a temporary file in the same folder, which is fsynced and renamed over the target (then the
 * folder is fsynced). A crash, even `kill -9`, leaves the previous file or the new complete one.
 * Owner-only permissions by default.
 * @see write-file-atomic.ts for the single-buffer variant and the shared algorithm.
 */
import { createReadStream } from 'node:fs'
import { replaceFileAtomic } from './write-file-atomic.js'

/** Where the lines come from: strings (without their newline), or a byte range of a file to copy as is. */
export type LineSource = Iterable<string> | AsyncIterable<string>

export interface WriteLinesOptions {
  /** File mode of the new file. Default 0o600. */
  mode?: number
  /** Bytes of an existing file to append after the lines (already newline-terminated). */
  copyFrom?: { file: string; bytes: number }
  /** Runs once the new file is complete and fsynced, before it replaces the target (files it refers to are made durable first). */
  beforeRename?: () => Promise<void>
}

const BATCH_BYTES = 256 * 1024

/** Write `lines` (each followed by `\n`) to `target` atomically. */
export async function writeLinesAtomic(target: string, lines: LineSource, options: WriteLinesOptions = {}): Promise<void> {
  await replaceFileAtomic(target, options, async (handle) => {
    let batch: string[] = []
    let batchBytes = 0
    for await (const line of lines) {
      batch.push(line, '\n')
      batchBytes += line.length + 1
      if (batchBytes >= BATCH_BYTES) {
        await handle.write(batch.join(''))
        batch = []
        batchBytes = 0
      }
    }
    if (batch.length) await handle.write(batch.join(''))
    if (options.copyFrom && options.copyFrom.bytes > 0) {
      for await (const chunk of createReadStream(options.copyFrom.file, { start: 0, end: options.copyFrom.bytes - 1, highWaterMark: BATCH_BYTES })) await handle.write(chunk as Buffer)
    }
  })
}
