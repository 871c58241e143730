/**
 * A lock one process holds at a time: a file created exclusively (`O_EXCL`) holding the owner's
 * pid. A lock whose process is gone (killed with SIGKILL) is taken over; another live owner is
 * waited for, polling, until the deadline. Released when the process exits, whatever ends it.
 *
 * @note Hand-written: `proper-lockfile` and the like lock by mtime and a refresh timer; an owner's
 * pid is what tells a live holder from one that was killed, and it costs no timer. Light on
 * purpose (node:fs only): `toolstorm mcp` takes one before it loads the rest.
 */
import { closeSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs'

export interface PidLockOptions {
  /** How long to wait for another live holder. */
  readonly waitMs: number
  /** Told once when another process holds the lock and this one waits. */
  readonly onWait?: ((pid: number) => void) | undefined
  /** The error when another live process still holds it after the wait. */
  readonly locked: (pid: number) => Error
  /** The error when the lock file cannot be created. */
  readonly unwritable: (error: unknown) => Error
}

const POLL_MS = 20

/** Take `lockFile` for this process, once no other live process holds it: resolves with its release (safe to call twice). */
export async function acquirePidLock(lockFile: string, options: PidLockOptions): Promise<() => void> {
  const deadline = Date.now() + options.waitMs
  let told = false
  for (;;) {
    const owner = tryCreate(lockFile, options)
    if (owner === null) break
    if (owner === 0 || !alive(owner)) {
      // Its process is gone (killed before it released the lock): take it over.
      removeIfOwnedBy(lockFile, owner)
      continue
    }
    if (Date.now() >= deadline) throw options.locked(owner)
    if (!told) options.onWait?.(owner)
    told = true
    await new Promise((resolve) => setTimeout(resolve, POLL_MS))
  }
  let released = false
  const release = () => {
    if (released) return
    released = true
    process.removeListener('exit', release)
    removeIfOwnedBy(lockFile, process.pid)
  }
  // Whatever ends the process (an error, a signal handled by exiting), the lock is not left held.
  process.once('exit', release)
  return release
}

/** Create the lock as this process's: null when it is ours now, else the pid holding it (0: unreadable). */
function tryCreate(lockFile: string, options: PidLockOptions): number | null {
  let fd: number
  try {
    fd = openSync(lockFile, 'wx', 0o600)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw options.unwritable(error)
    return ownerOf(lockFile)
  }
  try {
    writeSync(fd, `${process.pid}\n`)
  } finally {
    closeSync(fd)
  }
  return null
}

/** The pid a lock names; -1 when it cannot tell yet (removed meanwhile, or created and not yet written): look again; 0 when it names none. */
function ownerOf(lockFile: string): number {
  let text: string
  try {
    text = readFileSync(lockFile, 'utf8')
  } catch {
    return -1
  }
  if (text === '') return -1
  const pid = Number.parseInt(text, 10)
  return Number.isSafeInteger(pid) && pid > 0 ? pid : 0
}

function alive(pid: number): boolean {
  if (pid === -1) return true
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    // EPERM: it runs, as another user.
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/** Remove the lock if it still names `pid` (another process may have taken it over meanwhile). */
function removeIfOwnedBy(lockFile: string, pid: number): void {
  if (ownerOf(lockFile) === pid) rmSync(lockFile, { force: true })
}
