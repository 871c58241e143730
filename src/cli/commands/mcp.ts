/**
 * `toolstorm mcp [options] -- <server command> [args…]`: a stdio MCP server that runs the real one
 * as its child and relays JSON-RPC both ways under the rules (src/stdio/), so an agent's MCP
 * config changes only its command. `--replay FILE` answers from a cassette with no child (strict),
 * `--live ROUTE` sending those calls to the server after `--`.
 *
 * stdout is the protocol's: everything the wrapper says goes to stderr (and `--ready-file`). The
 * server's stderr passes through; its exit code (or signal) is the wrapper's; in replay the exit
 * code is the verdict's.
 *
 * This module is what the CLI loads first: it binds the admin port and launches the server, then
 * loads the rest (mcp-session.ts).
 */
import type { Argv, CommandModule } from 'yargs'
import { ConfigError } from '../../errors.js'
import { LISTEN_PORT, numberOption } from '../numeric-options.js'
import { claimLaunch, undoLaunch } from './mcp-launch.js'
import { bodyMatchOptions, type BodyMatchArgs } from './match-options.js'

/** The seed's bound (`SEED_LIMIT` of the rules schema, not imported: this module stays light). */
const SEED_LIMIT = Number.MAX_SAFE_INTEGER

export interface McpArgs extends BodyMatchArgs {
  host: string
  'admin-port': number
  'admin-token'?: string
  'print-admin-token': boolean
  rules?: string
  seed?: number
  report?: string
  clock: 'real' | 'virtual'
  'ready-file'?: string
  'exit-with-parent': boolean
  record?: string
  overwrite: boolean
  replay?: string
  order: 'strict' | 'any'
  'allow-unused': boolean
  'allow-repeats': boolean
  live: string[]
  'lost-answer': 'close' | 'silent'
  'state-dir'?: string
  '--'?: Array<string | number>
}

/** What a program that starts `toolstorm mcp` reads from `--ready-file` (stdout is the protocol's). */
export interface McpReadyInfo {
  readonly ready: true
  readonly toolstorm: string
  readonly pid: number
  readonly command: 'mcp'
  readonly adminUrl: string
  readonly adminPort: number
  readonly token: string
  readonly dashboardUrl: string | null
  /** The real server (null in a replay with no `--live` route). */
  readonly server: { readonly command: readonly string[]; readonly pid: number | null } | null
  readonly cassette?: { readonly file: string; readonly mode: 'record' | 'replay'; readonly exchanges?: number }
  /** With `--state-dir`: this launch's number in the run (1: a new run), and the run's state file. */
  readonly launch?: { readonly number: number; readonly stateFile: string }
}

export const mcpCommand: CommandModule<object, McpArgs> = {
  command: 'mcp',
  describe: 'Wrap a stdio MCP server (command after --): relay its JSON-RPC under the rules, record or replay it',
  builder: (yargs: Argv) =>
    bodyMatchOptions(
      yargs
        .parserConfiguration({ 'populate--': true, 'parse-positional-numbers': false })
        .option('rules', { type: 'string', describe: 'Rules file (JSON or YAML)' })
        .option('seed', { ...numberOption('seed', { min: -SEED_LIMIT, max: SEED_LIMIT, expected: 'an integer within ±(2^53−1)' }), describe: 'Seed (overrides the rules file)' })
        .option('report', { type: 'string', describe: 'Write the report here when the connection ends (atomically)' })
        .option('host', { type: 'string', default: '127.0.0.1', describe: 'Interface the admin API listens on (loopback unless you say otherwise)' })
        .option('admin-port', { ...numberOption('admin-port', LISTEN_PORT), default: 0, describe: 'Admin API port (default 0: a free one, named on stderr and in --ready-file)' })
        .option('admin-token', { type: 'string', describe: 'Admin bearer token (default: random, named on stderr only when it is a terminal)' })
        .option('print-admin-token', { type: 'boolean', default: false, describe: 'Name a generated admin token on stderr even when it is not a terminal (a log)' })
        .option('ready-file', { type: 'string', describe: 'Once running, write the admin URL, token and server pid here as JSON (atomically, owner-only)' })
        .option('clock', { choices: ['real', 'virtual'] as const, default: 'real' as const, describe: 'virtual: latency faults advance time instead of waiting (tests only)' })
        .option('exit-with-parent', { type: 'boolean', default: true, describe: 'Stop when the process that started this one exits' })
        .option('record', { type: 'string', describe: 'Record every call into this cassette (JSON Lines, appended as each call ends; a cassette already there gets a new segment)' })
        .option('overwrite', { type: 'boolean', default: false, describe: 'Record: replace the file instead of appending to the cassette there' })
        .option('replay', { type: 'string', describe: 'Answer from this cassette, strict, with no server (the command after -- only serves --live calls)' })
        .option('order', { choices: ['strict', 'any'] as const, default: 'strict' as const, describe: 'Replay: strict: calls in recorded order; any: each takes the first unused call it matches' })
        .option('allow-unused', { type: 'boolean', default: false, describe: 'Replay: recorded calls never made do not fail it' })
        .option('allow-repeats', { type: 'boolean', default: false, describe: 'Replay: a repeated call replays its answer again instead of failing as extra' })
        .option('live', { type: 'string', array: true, default: [] as string[], describe: 'Replay: route glob (tools/call read_file) sent to the server after -- instead of replayed (repeatable)' })
        .option('state-dir', { type: 'string', describe: 'Launches with this folder, the same server and the same rules are one run: a reconnecting agent\'s new launch continues it (ordinals, coverage, calls, effects, the recording), and the report covers every launch' })
        .option('lost-answer', { choices: ['close', 'silent'] as const, default: 'close' as const, describe: 'What a lost answer does (response_lost, reset): close ends the connection as a crashed server\'s; silent drops only the message and the client waits (timeout then sends nothing either)' }),
    )
      .example('$0 mcp --rules rules.yaml -- npx -y @modelcontextprotocol/server-filesystem /data', 'in the agent\'s MCP config: command "npx", args ["toolstorm", "mcp", "--rules", "rules.yaml", "--", …]')
      .example('$0 mcp --replay session.cassette.jsonl', 'answer a recorded session with no server; exit 1 if the calls differ') as unknown as Argv<McpArgs>,
  async handler(args) {
    const command = (args['--'] ?? []).map(String)
    checkArgs(args, command)
    // The server is launched before the rest of toolstorm loads, so their starts overlap (mcp-launch.ts):
    // by bin/toolstorm.js before this parser ran, when the command line is plain enough to read there.
    const launched = await claimLaunch({ host: args.host, adminPort: args['admin-port'], adminToken: args['admin-token'], stateDir: args['state-dir'], command })
    try {
      const { runMcpSession } = await import('./mcp-session.js')
      await runMcpSession(args, command, launched)
    } catch (error) {
      // A start that failed (a damaged state, a cassette that does not load) leaves nothing running.
      undoLaunch(launched)
      throw error
    }
  },
}

function checkArgs(args: McpArgs, command: readonly string[]): void {
  if (args.replay === undefined && command.length === 0) throw new ConfigError('Failed to start toolstorm mcp: give the MCP server\'s command after "--" (toolstorm mcp -- npx -y @modelcontextprotocol/server-memory), or --replay FILE.', { code: 'ERR_USAGE' })
  if (args.replay !== undefined && args.live.length > 0 && command.length === 0) throw new ConfigError('Failed to start toolstorm mcp: --live sends calls to a real server: give its command after "--".', { code: 'ERR_USAGE' })
  if (args.replay !== undefined && args.live.length === 0 && command.length > 0) throw new ConfigError(`Failed to start toolstorm mcp: with --replay the server after "--" (${command.join(' ')}) only answers --live calls, and none is given. Add --live 'tools/call <tool>' or leave the command out.`, { code: 'ERR_USAGE' })
  if (args.replay !== undefined && args['state-dir'] !== undefined) throw new ConfigError('Failed to start toolstorm mcp: --state-dir continues a run across launches of a server; a replay across launches is not supported. Replay each launch\'s cassette on its own.', { code: 'ERR_USAGE' })
  if (args.replay !== undefined && args.record !== undefined) throw new ConfigError('Failed to start toolstorm mcp: --record and --replay together are not supported: record with a server, replay with the cassette.', { code: 'ERR_USAGE' })
}
