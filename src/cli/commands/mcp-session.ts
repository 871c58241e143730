/**
 * The body of `toolstorm mcp` (mcp.ts), loaded once its server is launched and its admin port
 * bound: the storm, the cassette, the recorder, the admin API's routes, the stdio server, and the
 * end: files written, the verdict, the exit as the server's.
 */
import { constants } from 'node:os'
import type http from 'node:http'
import { ERROR_CODES } from '../../errors.js'
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
import type { SpawnedServer } from '../../stdio/spawn-server.js'
import { writeFileAtomic } from '../../io/write-file-atomic.js'
import { VERSION } from '../../version.js'
import { keepHeapWarm } from '../keep-heap-warm.js'
import { printError } from '../output.js'
import { onStopRequest } from '../stop-request.js'
import { cassetteWritten, reportDocument, stormFromArgs, type ProxyArgs } from './proxy.js'
import type { McpArgs, McpReadyInfo } from './mcp.js'

/** What mcp.ts did first: the admin API's server bound (not yet answering), its token, the server launched. */
export interface McpStart {
  readonly admin: http.Server
  readonly token: string
  readonly spawned: SpawnedServer | null
}

export async function runMcpSession(args: McpArgs, command: readonly string[], start: McpStart): Promise<void> {
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
        redactor: createRedactor({ keys: [...cassette.header.redaction.keys, ...config.redact.keys], secrets: config.redact.secrets }),
      })
    : null
  // Stored as a reverse proxy stores them (origin-form URLs), matched by method, tool and arguments.
  const recorder = args.record !== undefined ? createCassetteRecorder(storm, { file: args.record, source: 'proxy', urlForm: 'origin', overwrite: args.overwrite }) : null
  const opened = await recorder?.ready()
  // stderr: stdout is the protocol's.
  if (opened) printError(opened.message)
  const admin = await startAdminService({
    storm,
    host: args.host,
    server: start.admin,
    token: start.token,
    selfName: 'MCP wrapper',
    routes: [...(recorder ? [cassetteAdminRoute(recorder)] : []), ...(replay ? [replayAdminRoute(replay.session, 'replay')] : [])],
  }).catch(async (error: unknown) => {
    await recorder?.discard()
    start.spawned?.process.kill('SIGTERM')
    throw error
  })
  const server = startStdioServer({
    storm,
    input: process.stdin,
    output: process.stdout,
    command: command.length ? command : undefined,
    spawned: start.spawned ?? undefined,
    // Where the server reports its commits (the effects helpers read them), as the proxy's effectsEnv; a restart gets them too.
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
    for (const line of await cassetteWritten(args.record, recorder, null)) printError(line)
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
