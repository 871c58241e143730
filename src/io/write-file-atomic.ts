/**
 * Write a file so that a reader (or a crash, even `kill -9`) sees either the previous complete
 * file or the new complete one, never a torn one: a temporary file in the same folder, fsync,
 * rename over the target, fsync the folder. Owner-only permissions by default.
 *
 * @note Hand-written (instead of `write-file-atomic`) to keep the runtime dependency-free here;
 * it is the same algorithm.
 */
import { randomBytes } from 'node:crypto'
import { promises as fs } from 'node:fs'
import path from 'node:path'
import { ToolstormError } from '../errors.js'

export interface AtomicWriteOptions {
  /** File mode of the new file. Default 0o600 (owner read/write). */
  mode?: number
  /** Runs once the new file is complete and fsynced, before it replaces the target. */
  beforeRename?: () => Promise<void>
}

export async function writeFileAtomic(target: string, data: string | Uint8Array, options: AtomicWriteOptions = {}): Promise<void> {
  await replaceFileAtomic(target, options, (handle) => handle.writeFile(data))
}

/**
 * `writeFileAtomic` for a file the user named (`--report FILE`): a failure (no space, no
 * permission, a file where a folder should be) is `ERR_FILE_UNWRITABLE` naming `what` and the file.
 */
export async function writeUserFile(what: string, target: string, data: string | Uint8Array): Promise<void> {
  try {
    await writeFileAtomic(target, data)
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    if (code === undefined) throw error
    throw new ToolstormError('ERR_FILE_UNWRITABLE', `Failed to write the ${what} ${target}: ${code}. Give a path in a folder you can write to.`, { cause: error })
  }
}

/**
 * The algorithm itself: `fill` writes the new content into an open temporary file in the target's
 * folder; then fsync, rename over the target, fsync the folder. On failure the temporary file is
 * removed and the target is untouched.
 */
export async function replaceFileAtomic(target: string, options: AtomicWriteOptions, fill: (handle: fs.FileHandle) => Promise<void>): Promise<void> {
  const directory = path.dirname(path.resolve(target))
  await fs.mkdir(directory, { recursive: true })
  const temp = path.join(directory, `.toolstorm-${randomBytes(6).toString('hex')}.tmp`)
  let handle: fs.FileHandle | null = null
  try {
    handle = await fs.open(temp, 'wx', options.mode ?? 0o600)
    await fill(handle)
    await handle.sync()
    await handle.close()
    handle = null
    await options.beforeRename?.()
    await fs.rename(temp, target)
  } catch (error) {
    await handle?.close().catch(() => undefined)
    await fs.rm(temp, { force: true }).catch(() => undefined)
    throw error
  }
  // Make the rename itself durable. Some filesystems refuse to open a directory; the rename is still atomic.
  const dir = await fs.open(directory, 'r').catch(() => null)
  if (dir) {
    await dir.sync().catch(() => undefined)
    await dir.close()
  }
}
