/**
 * `toolstorm mcp [options] -- <server command> [args…]`: a stdio MCP server that runs the real one
 * as its child and relays JSON-RPC both ways under the rules (src/stdio/), so an agent's MCP
 * config changes only its command. `--replay FILE` answers from a cassette with no child (strict),
 * `--live ROUTE` sending those calls to the server after `--`.
 *
 * stdout is the protocol's: everything the wrapper says goes to stderr (and `--ready-file`). The
 * server's stderr passes through; its exit code (or signal) is the wrapper's; in replay the exit
 * code is the verdict's.
 */
import { constants } from 'node:os'
import type { Argv, CommandModule } from 'yargs'
import { ConfigError, ERROR_CODES } from '../../errors.js'
import { SEED_LIMIT } from '../../engine/schema/config.js'
import { Cassette } from '../../cassette/format/cassette.js'
import { createCassetteRecorder } from '../../cassette/record/cassette-recorder.js'
import { cassetteAdminRoute } from '../../cassette/record/cassette-admin-route.js'
import { replaySource } from '../../cassette/replay/replay-source.js'
import { replayAdminRoute } from '../../cassette/replay/replay-server.js'
import { formatReplayTable } from '../../cassette/replay/replay-session.js'
import { createRedactor } from '../../redact/index.js'
import { startAdminService } from '../../proxy/admin/admin-service.js'
import { LOOPBACK } from '../../proxy/server-pair.js'
import { startStdioServer, type StdioEnd } from '../../stdio/stdio-server.js'
import { describeExit } from '../../stdio/child-server.js'
import { writeFileAtomic } from '../../io/write-file-atomic.js'
import { VERSION } from '../../version.js'
import { keepHeapWarm } from '../keep-heap-warm.js'
import { LISTEN_PORT, numberOption } from '../numeric-options.js'
import { printError } from '../output.js'
import { onStopRequest } from '../stop-request.js'
import { cassetteWritten, reportDocument, stormFromArgs, type ProxyArgs } from './proxy.js'
import { commandAfterDashes } from './record.js'
import { matchFromArgs, recordOptions, type RecordArgs } from './record-options.js'

interface McpArgs extends RecordArgs {
  host: string
  'admin-port': number
  'admin-token'?: string
  rules?: string
  seed?: number
  report?: string
  clock: 'real' | 'virtual'
  'ready-file'?: string
  'exit-with-parent': boolean
  record?: string
  replay?: string
  order: 'strict' | 'any'
  'allow-unused': boolean
  'allow-repeats': boolean
  live: string[]
  'lost-answer': 'close' | 'silent'
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
}

export const mcpCommand: CommandModule<object, McpArgs> = {
  command: 'mcp',
  describe: 'Wrap a stdio MCP server (command after --): relay its JSON-RPC under the rules, record or replay it',
  builder: (yargs: Argv) =>
    recordOptions(yargs.parserConfiguration({ 'populate--': true, 'parse-positional-numbers': false }))
      .option('rules', { type: 'string', describe: 'Rules file (JSON or YAML)' })
      .option('seed', { ...numberOption('seed', { min: -SEED_LIMIT, max: SEED_LIMIT, expected: 'an integer within ±(2^53−1)' }), describe: 'Seed (overrides the rules file)' })
      .option('report', { type: 'string', describe: 'Write the report here when the connection ends (atomically)' })
      .option('host', { type: 'string', default: '127.0.0.1', describe: 'Interface the admin API listens on (loopback unless you say otherwise)' })
      .option('admin-port', { ...numberOption('admin-port', LISTEN_PORT), default: 0, describe: 'Admin API port (default 0: a free one, named on stderr and in --ready-file)' })
      .option('admin-token', { type: 'string', describe: 'Admin bearer token (default: random)' })
      .option('ready-file', { type: 'string', describe: 'Once running, write the admin URL, token and server pid here as JSON (atomically, owner-only)' })
      .option('clock', { choices: ['real', 'virtual'] as const, default: 'real' as const, describe: 'virtual: latency faults advance time instead of waiting (tests only)' })
      .option('exit-with-parent', { type: 'boolean', default: true, describe: 'Stop when the process that started this one exits' })
      .option('record', { type: 'string', describe: 'Record every call into this cassette (JSON Lines, written atomically)' })
      .option('replay', { type: 'string', describe: 'Answer from this cassette, strict, with no server (the command after -- only serves --live calls)' })
      .option('order', { choices: ['strict', 'any'] as const, default: 'strict' as const, describe: 'Replay: strict: calls in recorded order; any: each takes the first unused call it matches' })
      .option('allow-unused', { type: 'boolean', default: false, describe: 'Replay: recorded calls never made do not fail it' })
      .option('allow-repeats', { type: 'boolean', default: false, describe: 'Replay: a repeated call replays its answer again instead of failing as extra' })
      .option('live', { type: 'string', array: true, default: [] as string[], describe: 'Replay: route glob (tools/call read_file) sent to the server after -- instead of replayed (repeatable)' })
      .option('lost-answer', { choices: ['close', 'silent'] as const, default: 'close' as const, describe: 'What a lost answer does (response_lost, reset): close ends the connection as a crashed server\'s; silent drops only the message and the client waits (timeout then sends nothing either)' })
      .example('$0 mcp --rules rules.yaml -- npx -y @modelcontextprotocol/server-filesystem /data', 'in the agent\'s MCP config: command "npx", args ["toolstorm", "mcp", "--rules", "rules.yaml", "--", …]')
      .example('$0 mcp --replay session.cassette.jsonl', 'answer a recorded session with no server; exit 1 if the calls differ') as unknown as Argv<McpArgs>,
  async handler(args) {
    const command = commandAfterDashes(args)
    checkArgs(args, command)
    keepHeapWarm()
    const storm = await stormFromArgs({ ...args, target: [] } as unknown as ProxyArgs)
    if (!LOOPBACK.has(args.host)) printError(`the admin API listens on ${args.host}: anyone who can reach it can change the rules. Keep the admin token secret.`)
    const cassette = args.replay !== undefined ? await Cassette.load(args.replay) : null
    const config = storm.config
    const replay = cassette
      ? replaySource(cassette, {
          order: args.order,
          allowUnused: args['allow-unused'],
          allowRepeats: args['allow-repeats'],
          live: args.live.map(String),
          match: matchFromArgs(args),
          redactor: createRedactor({ keys: [...cassette.header.redaction.keys, ...config.redact.keys], secrets: config.redact.secrets }),
        })
      : null
    const recorder =
      args.record !== undefined
        ? createCassetteRecorder(storm, {
            file: args.record,
            source: 'proxy',
            urlForm: 'origin',
            bodyLimit: args['body-limit'],
            excludeHeaders: args['exclude-header'].map(String),
            includeHeaders: args['include-header'].map(String),
            match: matchFromArgs(args),
          })
        : null
    await recorder?.ready()
    const admin = await startAdminService({
      storm,
      host: args.host,
      port: args['admin-port'],
      token: args['admin-token'],
      selfName: 'MCP wrapper',
      routes: [...(recorder ? [cassetteAdminRoute(recorder)] : []), ...(replay ? [replayAdminRoute(replay.session, 'replay')] : [])],
    }).catch(async (error: unknown) => {
      await recorder?.discard()
      throw error
    })
    const server = startStdioServer({
      storm,
      input: process.stdin,
      output: process.stdout,
      command: command.length ? command : undefined,
      // Where the server reports its commits (the effects helpers read them), as the proxy's effectsEnv.
      env: { ...process.env, TOOLSTORM_SIDECAR: admin.url, TOOLSTORM_ADMIN_TOKEN: admin.token },
      source: replay ?? undefined,
      observer: recorder?.observer,
      lostAnswer: args['lost-answer'],
      warn: printError,
    })
    const dispose = onStopRequest((reason) => server.stop(reason === 'SIGINT' ? 'SIGINT' : 'SIGTERM'), { exitWithParent: args['exit-with-parent'] })
    const ready: McpReadyInfo = {
      ready: true,
      toolstorm: VERSION,
      pid: process.pid,
      command: 'mcp',
      adminUrl: admin.url,
      adminPort: Number(new URL(admin.url).port),
      token: admin.token,
      dashboardUrl: admin.dashboardUrl,
      server: server.child ? { command, pid: server.child.pid } : null,
      ...(args.record !== undefined ? { cassette: { file: args.record, mode: 'record' as const } } : args.replay !== undefined ? { cassette: { file: args.replay, mode: 'replay' as const, exchanges: cassette!.exchanges.length } } : {}),
    }
    if (args['ready-file'] !== undefined) await writeFileAtomic(args['ready-file'], JSON.stringify(ready) + '\n')
    printError(`toolstorm mcp ${server.child ? `→ ${command.join(' ')} (pid ${server.child.pid ?? '?'})` : `replaying ${args.replay}`} · admin ${admin.url} · token ${admin.token}`)
    // Announced first: a program that waits for the ready file sees it before its first answer.
    server.listen()

    const end = await server.ended
    dispose()
    await admin.close()
    await replay?.close()
    if (recorder && args.record !== undefined) {
      await recorder.close()
      for (const line of cassetteWritten(args.record, recorder, null)) printError(line)
    }
    if (args.report !== undefined) {
      await writeFileAtomic(args.report, JSON.stringify(await reportDocument(storm.ledger), null, 2) + '\n')
      printError(`report written to ${args.report}`)
    }
    if (server.stats.serverNonJson > 0) printError(`the MCP server wrote ${server.stats.serverNonJson} line(s) to stdout that are not JSON-RPC messages (relayed to the client)`)
    // Nothing more will be read: a client still connected does not keep the process alive.
    process.stdin.destroy()
    await flushed(process.stdout)
    if (replay) {
      const verdict = replay.session.verdict()
      printError(verdict.message)
      if (!verdict.passed) {
        for (const line of formatReplayTable(verdict.rows).split('\n')) process.stderr.write(`  ${line}\n`)
        process.stderr.write(`  (${verdict.code})\n`)
        process.exitCode = ERROR_CODES[verdict.code as keyof typeof ERROR_CODES].exit
        return
      }
    }
    exitAsServer(end, command)
  },
}

function checkArgs(args: McpArgs, command: readonly string[]): void {
  if (args.replay === undefined && command.length === 0) throw new ConfigError('Failed to start toolstorm mcp: give the MCP server\'s command after "--" (toolstorm mcp -- npx -y @modelcontextprotocol/server-memory), or --replay FILE.', { code: 'ERR_USAGE' })
  if (args.replay !== undefined && args.live.length > 0 && command.length === 0) throw new ConfigError('Failed to start toolstorm mcp: --live sends calls to a real server: give its command after "--".', { code: 'ERR_USAGE' })
  if (args.replay !== undefined && args.live.length === 0 && command.length > 0) throw new ConfigError(`Failed to start toolstorm mcp: with --replay the server after "--" (${command.join(' ')}) only answers --live calls, and none is given. Add --live 'tools/call <tool>' or leave the command out.`, { code: 'ERR_USAGE' })
  if (args.replay !== undefined && args.record !== undefined) throw new ConfigError('Failed to start toolstorm mcp: --record and --replay together are not supported: record with a server, replay with the cassette.', { code: 'ERR_USAGE' })
}

/** The wrapper ends as its server did: its exit code, or the signal that ended it; 127 when it could not start. */
function exitAsServer(end: StdioEnd, command: readonly string[]): void {
  if (end.reason === 'not-started') {
    const error = end.error
    const why = error?.code === 'ENOENT' ? 'command not found' : error?.code === 'EACCES' ? 'permission denied' : (error?.message ?? 'unknown error')
    printError(`Failed to start the MCP server "${command[0]}": ${why}. Check the command after "--".`)
    process.exitCode = error?.code === 'EACCES' ? 126 : 127
    return
  }
  const exit = end.exit
  if (!exit) return
  if (end.reason === 'fault') printError(`the MCP server was ended by the fault (${describeExit(exit)})`)
  else if (end.reason === 'server-exited' || exit.code !== 0) printError(`the MCP server exited (${describeExit(exit)})`)
  if (exit.signal) {
    // The same signal, so the client sees what a direct launch shows; the exit code stands in if it is caught.
    process.exitCode = 128 + (constants.signals[exit.signal] ?? 0)
    process.kill(process.pid, exit.signal)
    return
  }
  process.exitCode = exit.code ?? 1
}

/** Resolves once what was written to `stream` was handed to the OS. */
function flushed(stream: NodeJS.WriteStream): Promise<void> {
  return new Promise((resolve) => (stream.writableLength === 0 ? resolve() : stream.write('', () => resolve())))
}
