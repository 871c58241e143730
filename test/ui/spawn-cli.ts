/** Start a long-running `toolstorm` command as a user does and read the lines it prints first. */
import { spawn, type ChildProcess } from 'node:child_process'
import { BIN } from '../helpers/cli.js'

export interface RunningCli {
  readonly child: ChildProcess
  readonly lines: string[]
  stop(): Promise<number | null>
}

export async function startCli(args: string[], lineCount: number): Promise<RunningCli> {
  const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
  const lines = await new Promise<string[]>((resolve, reject) => {
    child.stdout?.on('data', (chunk: Buffer) => {
      stdout += chunk.toString()
      const all = stdout.split('\n')
      if (all.length > lineCount) resolve(all.slice(0, lineCount))
    })
    void exited.then((code) => reject(new Error(`toolstorm ${args[0]} exited ${code}: ${stderr}`)))
  })
  return {
    child,
    lines,
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM')
      return exited
    },
  }
}
