/** Child processes for benchmarks: start, read the first line, sample memory, stop. */
import { spawn, type ChildProcess } from 'node:child_process'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
// @ts-expect-error autocannon ships no types
import autocannon from 'autocannon'

export interface Child {
  readonly process: ChildProcess
  readonly firstLine: string
  rssBytes(): number
  /** CPU time (user + system) the process has used so far, in ms; clock-tick resolution. */
  cpuMs(): number
  stop(): Promise<void>
}

/** Linux's USER_HZ: 100 on every architecture Node supports. */
const CLOCK_TICKS = 100

const ROOT = fileURLToPath(new URL('..', import.meta.url))

/**
 * Run a TypeScript file in one node process (`--import tsx`), not through the tsx binary, which
 * would put a wrapper process between us and the server whose CPU and memory we sample.
 */
export function startTs(file: string, args: string[] = []): Promise<Child> {
  return startChild(process.execPath, ['--import', 'tsx', path.resolve(ROOT, file), ...args])
}

export async function startChild(command: string, args: string[], options: { ipc?: boolean } = {}): Promise<Child> {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'inherit', ...(options.ipc ? (['ipc'] as const) : [])], cwd: ROOT })
  const firstLine = await new Promise<string>((resolve, reject) => {
    let buffer = ''
    child.stdout!.on('data', (chunk: Buffer) => {
      buffer += chunk.toString()
      const newline = buffer.indexOf('\n')
      if (newline !== -1) resolve(buffer.slice(0, newline))
    })
    child.once('exit', (code) => reject(new Error(`${command} ${args.join(' ')} exited with ${code}`)))
  })
  return {
    process: child,
    firstLine,
    rssBytes: () => {
      try {
        const status = readFileSync(`/proc/${child.pid}/status`, 'utf8')
        return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0) * 1024
      } catch {
        return 0
      }
    },
    cpuMs: () => {
      try {
        // Fields after the command name (which may hold spaces): utime and stime are the 12th and 13th.
        const stat = readFileSync(`/proc/${child.pid}/stat`, 'utf8')
        const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
        return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS
      } catch {
        return 0
      }
    },
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve()
        child.once('exit', () => resolve())
        child.kill('SIGTERM')
      }),
  }
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = Math.floor(sorted.length / 2)
  return sorted.length % 2 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2
}

export interface CannonResult {
  requests: { average: number; total: number }
  errors: number
  timeouts: number
  non2xx: number
}

/** Load `url` with autocannon: `connections` clients, no pipelining, for `seconds`. */
export function cannon(url: string, connections: number, seconds: number): Promise<CannonResult> {
  return autocannon({ url, connections, duration: seconds, pipelining: 1 }) as Promise<CannonResult>
}
