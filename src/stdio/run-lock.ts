/**
 * Which `toolstorm mcp` holds a continued run (`--state-dir`): one process at a time, so the run's
 * state passes from one launch to the next whole. An agent that reconnects launches the new
 * wrapper while the old one may still be ending (saving the run, stopping its server): the new one
 * waits for it, then reads what it saved.
 *
 * A lock file created exclusively (`O_EXCL`) holding the owner's pid; a lock whose process is gone
 * (killed with SIGKILL) is taken over. Light on purpose (node:fs only): mcp.ts takes it before it
 * binds the admin port or launches the server, both of which the previous launch may still hold.
 *
 * @note Hand-written: `proper-lockfile` and the like lock by mtime and a refresh timer; an owner's
 * pid is what tells a live launch from one that was killed, and it costs no timer.
 */
import { closeSync, mkdirSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs'
import { createHash } from 'node:crypto'
import path from 'node:path'
import { ToolstormError } from '../errors.js'

export interface RunLock {
  /** The run's state file (`<folder>/mcp-<digest of the server command>.json`). */
  readonly stateFile: string
  /** Give the run up (the state is saved): the next launch may take it. Safe to call twice. */
  release(): void
}

export interface RunLockOptions {
  /** How long to wait for the launch that holds the run (default 15 s: ending takes up to ~7 s). */
  readonly waitMs?: number
  /** Told once when another launch holds the run and this one waits. */
  readonly onWait?: (pid: number) => void
}

const DEFAULT_WAIT_MS = 15_000
const POLL_MS = 20

/**
 * The run of `identity` (the server's command) in `folder`, once no other launch holds it.
 * Throws `ERR_STATE_LOCKED` when another live launch still holds it after the wait (two agents
 * using the same server and folder at once), `ERR_FILE_UNWRITABLE` when the folder cannot be written.
 */
export async function acquireRunLock(folder: string, identity: readonly string[], options: RunLockOptions = {}): Promise<RunLock> {
  const name = `mcp-${createHash('sha256').update(JSON.stringify(identity)).digest('hex').slice(0, 16)}`
  const lockFile = path.join(folder, `${name}.lock`)
  const stateFile = path.join(folder, `${name}.json`)
  try {
    mkdirSync(folder, { recursive: true, mode: 0o700 })
  } catch (error) {
    throw unwritable(folder, error)
  }
  const deadline = Date.now() + (options.waitMs ?? DEFAULT_WAIT_MS)
  let told = false
  for (;;) {
    const owner = tryCreate(lockFile, folder)
    if (owner === null) break
    if (owner === 0 || !alive(owner)) {
      // Its process is gone (killed before it released the run): take it over.
      removeIfOwnedBy(lockFile, owner)
      continue
    }
    if (Date.now() >= deadline) {
      throw new ToolstormError('ERR_STATE_LOCKED', `Failed to start toolstorm mcp: another toolstorm mcp (pid ${owner}) holds the run of this server in ${folder} (--state-dir). One launch at a time continues a run: give each concurrent connection its own --state-dir, or end the other one.`)
    }
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
  // Whatever ends the process (an error, a signal handled by exiting), the run is not left held.
  process.once('exit', release)
  return { stateFile, release }
}

/** Create the lock as this process's: null when it is ours now, else the pid holding it (0: unreadable). */
function tryCreate(lockFile: string, folder: string): number | null {
  let fd: number
  try {
    fd = openSync(lockFile, 'wx', 0o600)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw unwritable(folder, error)
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

/** Remove the lock if it still names `pid` (another launch may have taken it over meanwhile). */
function removeIfOwnedBy(lockFile: string, pid: number): void {
  if (ownerOf(lockFile) === pid) rmSync(lockFile, { force: true })
}

function unwritable(folder: string, error: unknown): ToolstormError {
  const code = (error as NodeJS.ErrnoException).code ?? String(error)
  return new ToolstormError('ERR_FILE_UNWRITABLE', `Failed to start toolstorm mcp: cannot write the state folder ${folder} (${code}). Give --state-dir a folder you can write to.`, { cause: error })
}
