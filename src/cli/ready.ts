/**
 * How a program that starts `toolstorm proxy`, `record` or `replay` learns where it listens, without
 * reading the human banner: `--ready-json` prints one JSON line on stdout once both servers listen
 * (the banner goes to stderr then), `--ready-file PATH` writes the same JSON to a file atomically
 * (owner-only: it holds the admin token). The pytest plugin reads the line.
 */
import type { Argv } from 'yargs'
import { writeFileAtomic } from '../io/write-file-atomic.js'
import type { ProxyServer } from '../proxy/proxy-server.js'
import { VERSION } from '../version.js'
import { printError, printLine } from './output.js'

export interface ReadyArgs {
  'ready-json': boolean
  'ready-file'?: string
}

export function readyOptions<T>(yargs: Argv<T>): Argv<T & ReadyArgs> {
  return yargs
    .option('ready-json', { type: 'boolean', default: false, describe: 'For programs: once listening, print one JSON line on stdout (urls, ports, admin token); the banner goes to stderr' })
    .option('ready-file', { type: 'string', describe: 'For programs: once listening, write the same JSON to this file (atomically, owner-only)' }) as unknown as Argv<T & ReadyArgs>
}

/** What a program needs to drive a running server. */
export interface ReadyInfo {
  readonly ready: true
  readonly toolstorm: string
  readonly pid: number
  readonly command: 'proxy' | 'record' | 'replay'
  readonly mode: 'reverse' | 'forward'
  readonly url: string
  readonly port: number
  readonly adminUrl: string
  readonly adminPort: number
  readonly token: string
  readonly dashboardUrl: string | null
  /** The CA certificate clients must trust for HTTPS through CONNECT (forward mode), else null. */
  readonly ca: string | null
  /** `record` and `replay`: the cassette and what is done with it. */
  readonly cassette?: { readonly file: string; readonly mode: string; readonly exchanges?: number }
}

export function readyInfo(command: ReadyInfo['command'], proxy: ProxyServer, cassette?: ReadyInfo['cassette']): ReadyInfo {
  return {
    ready: true,
    toolstorm: VERSION,
    pid: process.pid,
    command,
    mode: proxy.mode,
    url: proxy.url,
    port: Number(new URL(proxy.url).port),
    adminUrl: proxy.adminUrl,
    adminPort: Number(new URL(proxy.adminUrl).port),
    token: proxy.token,
    dashboardUrl: proxy.dashboardUrl,
    ca: proxy.ca?.certificatePath ?? null,
    ...(cassette ? { cassette } : {}),
  }
}

/**
 * Print the banner and announce readiness: with `--ready-json` the JSON line is the first thing on
 * stdout and the banner goes to stderr; `--ready-file` is written before the line is printed.
 * `bannerOn`: where the banner goes otherwise.
 */
export async function announceReady(args: ReadyArgs, banner: readonly string[], info: ReadyInfo, bannerOn: (line: string) => void = printLine): Promise<void> {
  if (args['ready-file'] !== undefined) await writeFileAtomic(args['ready-file'], JSON.stringify(info) + '\n')
  if (!args['ready-json']) {
    for (const line of banner) bannerOn(line)
    return
  }
  printLine(JSON.stringify(info))
  for (const line of banner) printError(line)
}
