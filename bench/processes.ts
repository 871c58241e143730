/** Child processes for benchmarks: start, read the first line, sample memory, stop. */
import { spawn, type ChildProcess } from 'node:child_process'
import { readFileSync } from 'node:fs'

export interface Child {
  readonly process: ChildProcess
  readonly firstLine: string
  rssBytes(): number
  stop(): Promise<void>
}

export async function startChild(command: string, args: string[]): Promise<Child> {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'inherit'] })
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
