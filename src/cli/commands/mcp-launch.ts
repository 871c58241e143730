/**
 * How `toolstorm mcp` launches its server: the run taken (`--state-dir`), the admin port bound
 * (the server needs its URL in `TOOLSTORM_SIDECAR`), then the server spawned, before the rest of
 * toolstorm loads, so the two starts overlap (docs/benchmarks.md#mcp-stdio-stdio-mcp-servers).
 *
 * bin/toolstorm.js starts this even before the command line parser (yargs, ~150-250 ms of a start
 * on a loaded machine) loads: `launchEarly` reads the few options it needs straight from argv. The
 * parser stays the judge: the handler claims the early launch only when the options it parsed are
 * the same (`claimLaunch`), else the early one is undone and the launch made again; a command
 * line the parser refuses undoes it too (`releaseUnclaimed`). Light on purpose: node built-ins and
 * the light modules the admin port and the server need.
 */
import type http from 'node:http'
import path from 'node:path'
import { adminToken, createAdminHttpServer } from '../../proxy/admin/admin-http-server.js'
import { formatOrigin, listenServer } from '../../proxy/server-pair.js'
import { spawnServer, type SpawnedServer } from '../../stdio/spawn-server.js'
import { acquireRunLock, type RunLock } from '../../stdio/run-lock.js'
import { printError } from '../output.js'

/** What a launch depends on: the options that name the admin port, the run and the server. */
export interface LaunchOptions {
  readonly host: string
  readonly adminPort: number
  readonly adminToken: string | undefined
  readonly stateDir: string | undefined
  /** The server's command (after `--`); empty: none is spawned (a replay). */
  readonly command: readonly string[]
}

export interface Launched {
  /** The admin API's server, bound (its routes come later). */
  readonly admin: http.Server
  readonly token: string
  readonly spawned: SpawnedServer | null
  /** `--state-dir`: the run this launch holds. */
  readonly lock: RunLock | null
}

/** Take the run, bind the admin port, spawn the server. What failed is undone. */
export async function launchMcp(options: LaunchOptions): Promise<Launched> {
  // A continued run is held by one launch at a time: the previous one may still be saving it, and
  // still hold the admin port and the server's resources, so this comes first.
  const lock = options.stateDir !== undefined ? await acquireRunLock(path.resolve(options.stateDir), options.command, { onWait: (pid) => printError(`waiting for the previous toolstorm mcp (pid ${pid}) to save the run in ${options.stateDir}...`) }) : null
  try {
    const token = adminToken(options.adminToken, 'MCP wrapper')
    const admin = createAdminHttpServer()
    const address = await listenServer(admin, options.adminPort, options.host, 'admin')
    const env = { ...process.env, TOOLSTORM_SIDECAR: formatOrigin(options.host, address.port), TOOLSTORM_ADMIN_TOKEN: token }
    return { admin, token, lock, spawned: options.command.length ? spawnServer(options.command, env) : null }
  } catch (error) {
    lock?.release()
    throw error
  }
}

/** Undo a launch: the server stopped, the admin port closed, the run given back. */
export function undoLaunch(launched: Launched): void {
  launched.spawned?.process.kill('SIGTERM')
  launched.admin.close()
  launched.lock?.release()
}

interface Early {
  readonly options: LaunchOptions
  readonly launched: Promise<Launched>
  claimed: boolean
}

let early: Early | null = null

/** Launch from `argv` (what follows `mcp`) before it is parsed, when it is plain enough to read here. */
export function launchEarly(argv: readonly string[]): void {
  const options = prescan(argv)
  if (!options) return
  const launched = launchMcp(options)
  // A failure is the handler's to report, once it parsed the same options (else nobody's).
  launched.catch(() => undefined)
  early = { options, launched, claimed: false }
}

/** The early launch when it was made with these options; else a launch made now (an early one undone first). */
export async function claimLaunch(options: LaunchOptions): Promise<Launched> {
  const found = early
  early = null
  if (found && sameOptions(found.options, options)) {
    found.claimed = true
    return found.launched
  }
  if (found) await found.launched.then(undoLaunch, () => undefined)
  return launchMcp(options)
}

/** An early launch the handler never claimed (the parser refused the command line): undone. */
export async function releaseUnclaimed(): Promise<void> {
  const found = early
  early = null
  if (found && !found.claimed) await found.launched.then(undoLaunch, () => undefined)
}

function sameOptions(a: LaunchOptions, b: LaunchOptions): boolean {
  return a.host === b.host && a.adminPort === b.adminPort && a.adminToken === b.adminToken && a.stateDir === b.stateDir && a.command.length === b.command.length && a.command.every((part, i) => part === b.command[i])
}

/** The options of `toolstorm mcp` that take a value, and those that do not (the parser's list, mcp.ts). */
const VALUED = new Set(['rules', 'seed', 'report', 'host', 'admin-port', 'admin-token', 'ready-file', 'clock', 'record', 'order', 'live', 'lost-answer', 'state-dir', 'ignore-body-field', 'normalize', 'normalize-pattern', 'normalize-path'])
const FLAGS = new Set(['exit-with-parent', 'no-exit-with-parent', 'allow-unused', 'no-allow-unused', 'allow-repeats', 'no-allow-repeats', 'print-admin-token', 'no-print-admin-token'])

/**
 * The launch options in `argv`, read as the parser reads them (`--name value`, `--name=value`,
 * defaults), or null for anything less plain (a replay, help, an option not listed, a value that
 * is not a port): the handler then launches after parsing, as it always can.
 */
export function prescan(argv: readonly string[]): LaunchOptions | null {
  const split = argv.indexOf('--')
  if (split === -1 || split === argv.length - 1) return null
  const values = new Map<string, string>()
  const head = argv.slice(0, split)
  for (let i = 0; i < head.length; i++) {
    const token = head[i] as string
    if (!token.startsWith('--')) return null
    const eq = token.indexOf('=')
    const name = token.slice(2, eq === -1 ? undefined : eq)
    if (FLAGS.has(name) && eq === -1) continue
    if (!VALUED.has(name)) return null
    const value = eq === -1 ? head[++i] : token.slice(eq + 1)
    if (value === undefined || (eq === -1 && value.startsWith('-'))) return null
    // A repeated option the parser would read as a list: leave it to the parser.
    if (values.has(name) && name !== 'live') return null
    values.set(name, value)
  }
  const port = values.get('admin-port') ?? '0'
  if (!/^\d{1,5}$/.test(port) || Number(port) > 65_535) return null
  return { host: values.get('host') ?? '127.0.0.1', adminPort: Number(port), adminToken: values.get('admin-token'), stateDir: values.get('state-dir'), command: argv.slice(split + 1) }
}
