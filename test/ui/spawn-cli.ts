/** Start a long-running `toolstorm` command as a user does and read the lines it prints first. */
import { spawn, type ChildProcess } from 'node:child_process'
import { BIN } from '../helpers/cli.js'

export interface RunningCli {
  readonly child: ChildProcess
  readonly lines: string[]
  /** What it printed on stderr so far (the verdict, "report written to …"). */
  readonly stderr: string
  /** SIGTERM; resolves with the exit code (null when a signal ended it). */
  stop(): Promise<number | null>
}

export async function startCli(args: string[], lineCount: number, env: NodeJS.ProcessEnv = {}): Promise<RunningCli> {
  const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } })
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
    get stderr() {
      return stderr
    },
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM')
      return exited
    },
  }
}

/** The data plane's URL from the first banner line (`toolstorm proxy|replay URL …`). */
export function servedUrl(cli: RunningCli): string {
  const match = /^toolstorm (?:proxy|replay) (\S+) /.exec(cli.lines[0] ?? '')
  if (!match) throw new Error(`Failed to read the URL from the banner: ${cli.lines[0]}`)
  return match[1] as string
}

/** What `toolstorm proxy --print-admin-token` prints in its first three lines: its addresses, the token and the dashboard's link. */
export function printedAddresses(cli: RunningCli): { proxyUrl: string; adminUrl: string; token: string; dashboardUrl: string } {
  const read = (pattern: RegExp, line: number) => {
    const match = pattern.exec(cli.lines[line] ?? '')
    if (!match) throw new Error(`Failed to read ${pattern} from line ${line + 1} of the banner: ${cli.lines[line]}`)
    return match[1] as string
  }
  return { proxyUrl: servedUrl(cli), adminUrl: read(/ · admin (\S+)$/, 0), token: read(/^admin token: (\S+) /, 1), dashboardUrl: read(/^dashboard: (\S+)$/, 2) }
}
