/**
 * Launch a stdio MCP server: its stdin and stdout piped, its stderr the wrapper's. Light on
 * purpose (node:child_process only): `toolstorm mcp` launches the server before it loads the
 * rest of toolstorm, so the server's start and the wrapper's overlap (docs/benchmarks.md#mcp-stdio).
 * What happens before the wrapper takes the process over (a failed launch, an early exit) is kept.
 */
import { spawn, type ChildProcess } from 'node:child_process'

export interface SpawnedServer {
  readonly process: ChildProcess
  /** The launch failed (ENOENT: no such command), once known. */
  error: NodeJS.ErrnoException | null
  /** The process ended and its stdout closed, once it did. */
  closed: { code: number | null; signal: NodeJS.Signals | null } | null
}

export function spawnServer(command: readonly string[], env: NodeJS.ProcessEnv): SpawnedServer {
  const [file, ...args] = command as [string, ...string[]]
  const child = spawn(file, args, { stdio: ['pipe', 'pipe', 'inherit'], env })
  const spawned: SpawnedServer = { process: child, error: null, closed: null }
  child.once('error', (error: NodeJS.ErrnoException) => {
    if (child.pid === undefined) spawned.error = error
  })
  child.once('close', (code, signal) => (spawned.closed = { code, signal }))
  // A write after the server died fails with EPIPE: its end is reported by `close`.
  child.stdin!.on('error', () => undefined)
  return spawned
}
