/**
 * `toolstorm proxy …` as a child process, as a supervisor runs it: started, its URL read off the
 * banner, stopped with SIGTERM (or killed with SIGKILL by the test); killed when the test ends if it
 * still runs (`closingChild`). What it printed on stderr stays readable after it exited.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { BIN } from './cli.js'
import { closingChild } from './teardown.js'

export interface CliProxy {
  readonly child: ChildProcess
  /** The data plane's URL. */
  readonly url: string
  /** The admin API's URL, from the same banner line (where tool servers report their effects). */
  readonly adminUrl: string
  /** Resolves with the exit code once it exited. */
  readonly exited: Promise<number | null>
  stderr(): string
  /** SIGTERM, then its stderr once it exited. */
  stop(): Promise<string>
}

export function startCliProxy(args: readonly string[]): Promise<CliProxy> {
  const child = closingChild(spawn(process.execPath, [BIN, 'proxy', '--port', '0', '--admin-port', '0', ...args], { stdio: ['ignore', 'pipe', 'pipe'] }))
  let stdout = ''
  let stderr = ''
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk))
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
  return new Promise((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      stdout += chunk
      const banner = /^toolstorm proxy (\S+) .*· admin (\S+)$/m.exec(stdout)
      if (banner)
        resolve({
          child,
          url: banner[1]!,
          adminUrl: banner[2]!,
          exited,
          stderr: () => stderr,
          stop: async () => {
            child.kill('SIGTERM')
            await exited
            return stderr
          },
        })
    })
    child.once('exit', (code) => reject(new Error(`toolstorm proxy exited ${code}: ${stderr}`)))
  })
}
