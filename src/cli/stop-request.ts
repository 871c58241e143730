/**
 * When a long-running command (`proxy`, `record`, `replay`, `lab`) must stop and write its files:
 * SIGINT or SIGTERM, and also when what started it can no longer tell it to.
 *
 * - **Its parent exits** (a test runner killed hard, a CI step that ended): the process was
 *   reparented, so nothing will ever signal it; it stops as on SIGTERM. `--no-exit-with-parent`
 *   keeps it running (a CI step that starts it in the background for the next steps).
 * - **Started through npm** (`npx toolstorm …`, an npm script): npm runs the bin through
 *   `sh -c`, and forwards SIGINT and SIGTERM to that shell only. dash dies on SIGTERM (then the
 *   parent is gone, above), but it catches SIGINT and holds it until its child, this process,
 *   exits: the signal never arrives. A shell waiting for its one child sleeps in wait4 and wakes
 *   only for a signal it catches, so a wake of that shell (its voluntary context switches, in
 *   /proc on Linux) stands for the SIGINT npm forwarded.
 *
 * @see https://github.com/npm/cli/issues/6684 for npm's side.
 */
import { readFileSync } from 'node:fs'

export type StopReason = 'SIGINT' | 'SIGTERM' | 'parent exited'

export interface StopOptions {
  /** Stop when the parent process exits (default true). */
  readonly exitWithParent?: boolean
}

/** How often the launcher is looked at: a stop is noticed within this, well inside the 2 s a stop may take. */
const POLL_MS = 200
/** A poll this late means this process was stopped (Ctrl-Z) or starved: the shell's wakes meanwhile are not a signal. */
const LATE_MS = 1_000

/** The voluntary context switches of `pid`, or null when it cannot be read (gone, not Linux). */
function voluntarySwitches(pid: number): number | null {
  try {
    const match = /^voluntary_ctxt_switches:\s*(\d+)$/m.exec(readFileSync(`/proc/${pid}/status`, 'latin1'))
    return match ? Number(match[1]) : null
  } catch {
    return null
  }
}

/** Single-quoted text removed: npm quotes the command and the arguments that need it. */
const UNQUOTED = /'[^']*'/g
const SHELL_SYNTAX = /[;&|<>`$()\n]/

/**
 * The pid of the shell npm runs this process through, when that shell runs nothing else
 * (`sh -c "'toolstorm' proxy …"`): then its wakes are signals meant for this process. Else null.
 */
function npmWrapperShell(): number | null {
  if (process.platform !== 'linux' || process.env.npm_lifecycle_event === undefined) return null
  try {
    const [shell, flag, script] = readFileSync(`/proc/${process.ppid}/cmdline`, 'utf8').split('\0')
    if (flag !== '-c' || script === undefined || !/(^|\/)(sh|dash|bash)$/.test(shell ?? '')) return null
    return SHELL_SYNTAX.test(script.replace(UNQUOTED, '')) ? null : process.ppid
  } catch {
    return null
  }
}

/**
 * Call `listener` for each request to stop: every SIGINT and SIGTERM (a second Ctrl-C may mean
 * more), and once the parent exits. Returns a function that stops listening.
 *
 * @example
 * const dispose = onStopRequest((reason) => void shutdown(reason))
 */
export function onStopRequest(listener: (reason: StopReason) => void, options: StopOptions = {}): () => void {
  const onInt = () => listener('SIGINT')
  const onTerm = () => listener('SIGTERM')
  process.on('SIGINT', onInt)
  process.on('SIGTERM', onTerm)
  const parent = process.ppid
  const shell = options.exitWithParent === false ? null : npmWrapperShell()
  let switches = shell === null ? null : voluntarySwitches(shell)
  let due = Date.now() + POLL_MS
  // Unref'd: the servers keep the process alive, never this timer.
  const timer =
    options.exitWithParent === false
      ? null
      : setInterval(() => {
          const late = Date.now() - due > LATE_MS
          due = Date.now() + POLL_MS
          if (process.ppid !== parent) {
            clearInterval(timer as NodeJS.Timeout)
            return listener('parent exited')
          }
          if (shell === null) return
          const now = voluntarySwitches(shell)
          const woken = !late && now !== null && switches !== null && now !== switches
          switches = now
          if (woken) listener('SIGINT')
        }, POLL_MS).unref()
  return () => {
    process.off('SIGINT', onInt)
    process.off('SIGTERM', onTerm)
    if (timer) clearInterval(timer)
  }
}

/** Resolve with the first reason to stop; later ones are not listened to. */
export function untilStopRequested(options: StopOptions = {}): Promise<StopReason> {
  return new Promise((resolve) => {
    const dispose = onStopRequest((reason) => {
      dispose()
      resolve(reason)
    }, options)
  })
}
