/**
 * Which `toolstorm mcp` holds a continued run (`--state-dir`): one process at a time, so the run's
 * state passes from one launch to the next whole. An agent that reconnects launches the new
 * wrapper while the old one may still be ending (saving the run, stopping its server): the new one
 * waits for it, then reads what it saved.
 *
 * The lock (io/pid-lock.ts) is taken before mcp.ts binds the admin port or launches the server,
 * both of which the previous launch may still hold.
 */
import { mkdirSync } from 'node:fs'
import { createHash } from 'node:crypto'
import path from 'node:path'
import { ToolstormError } from '../errors.js'
import { acquirePidLock } from '../io/pid-lock.js'

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
  const release = await acquirePidLock(lockFile, {
    waitMs: options.waitMs ?? DEFAULT_WAIT_MS,
    onWait: options.onWait,
    locked: (owner) => new ToolstormError('ERR_STATE_LOCKED', `Failed to start toolstorm mcp: another toolstorm mcp (pid ${owner}) holds the run of this server in ${folder} (--state-dir). One launch at a time continues a run: give each concurrent connection its own --state-dir, or end the other one.`),
    unwritable: (error) => unwritable(folder, error),
  })
  return { stateFile, release }
}

function unwritable(folder: string, error: unknown): ToolstormError {
  const code = (error as NodeJS.ErrnoException).code ?? String(error)
  return new ToolstormError('ERR_FILE_UNWRITABLE', `Failed to start toolstorm mcp: cannot write the state folder ${folder} (${code}). Give --state-dir a folder you can write to.`, { cause: error })
}
