/**
 * The body of `toolstorm mcp` (mcp.ts), loaded once its server is launched and its admin port
 * bound: the storm, the cassette, the recorder, the admin API's routes, the stdio server, and the
 * end: files written, the verdict, the exit as the server's.
 */
import { existsSync } from 'node:fs'
import { rm } from 'node:fs/promises'
import { constants } from 'node:os'
import path from 'node:path'
import { startAdminService } from '../../proxy/admin/admin-service.js'
import { LOOPBACK } from '../../proxy/server-pair.js'
import { startStdioServer, type StdioEnd } from '../../stdio/stdio-server.js'
import { describeExit } from '../../stdio/child-server.js'
import { configDigest, continueRun, saveRun, type ContinuedRun } from '../../stdio/run-state.js'
import { writeFileAtomic } from '../../io/write-file-atomic.js'
import { VERSION } from '../../version.js'
import { keepHeapWarm } from '../keep-heap-warm.js'
import { printError } from '../output.js'
import { onStopRequest } from '../stop-request.js'
import { adminTokenShown } from '../admin-token.js'
import { reportDocument, stormFromArgs } from '../storm-from-args.js'
import type { McpArgs, McpReadyInfo } from './mcp.js'
import type { Launched } from './mcp-launch.js'

/** What mcp.ts did first (mcp-launch.ts): the run taken, the admin API's server bound (not yet answering), its token, the server launched. */
export type McpStart = Launched

export async function runMcpSession(args: McpArgs, command: readonly string[], start: McpStart): Promise<void> {
  keepHeapWarm()
  const storm = await stormFromArgs(args)
  if (!LOOPBACK.has(args.host)) printError(`the admin API listens on ${args.host}: anyone who can reach it can change the rules. Keep the admin token secret.`)
  const recordFile = args.record !== undefined ? path.resolve(args.record) : null
  // A continued run (--state-dir): what the earlier launches saved, read before the first call.
  const config = start.lock ? configDigest(storm) : ''
  const continued: ContinuedRun = start.lock ? await continueRun(storm, { file: start.lock.stateFile, config, record: recordFile }) : { launch: 1, continued: false, record: null }
  if (continued.replaced) printError(continued.replaced)
  // The cassette side only when it is used: a plain wrapper does not load it.
  const cassette = args.record !== undefined || args.replay !== undefined ? await (await import('./mcp-cassette.js')).mcpCassette(args, storm, continued, recordFile) : null
  const admin = await startAdminService({
    storm,
    host: args.host,
    server: start.admin,
    token: start.token,
    selfName: 'MCP wrapper',
    routes: cassette?.routes ?? [],
  }).catch(async (error: unknown) => {
    await cassette?.discard()
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
    source: cassette?.source,
    observer: cassette?.observer,
    lostAnswer: args['lost-answer'],
    launch: continued.launch,
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
    ...(cassette ? { cassette: cassette.ready } : {}),
    ...(start.lock ? { launch: { number: continued.launch, stateFile: start.lock.stateFile } } : {}),
  }
  if (args['ready-file'] !== undefined) await writeFileAtomic(args['ready-file'], JSON.stringify(ready) + '\n')
  // The token only as the proxy's banner shows it (admin-token.ts): an MCP client's log is not a terminal.
  const token = adminTokenShown(args, true)
  printError(`toolstorm mcp ${server.child ? `→ ${command.join(' ')} (pid ${server.child.pid ?? '?'})` : `replaying ${args.replay}`} · admin ${admin.url} · token ${token.shown ? admin.token : token.instead}${continued.continued ? ` · launch ${continued.launch} of the run saved in ${start.lock!.stateFile}` : ''}`)
  // Announced first: a program that waits for the ready file sees it before its first answer.
  server.listen()

  const end = await server.ended
  dispose()
  await admin.close()
  await cassette?.close()
  if (args.report !== undefined) {
    // A relaunched server's wrapper writes the same file: without --state-dir the earlier launches' calls are lost, said here.
    const replaced = !start.lock && existsSync(args.report)
    await writeFileAtomic(args.report, JSON.stringify(await reportDocument(storm.ledger), null, 2) + '\n')
    printError(`report written to ${args.report}${replaced ? ' (it replaced the one there, which this launch\'s calls do not include: if that was an earlier launch of this server, give --state-dir to make the launches one run)' : ''}`)
  }
  if (start.lock) {
    // Saved before the process ends: the client sees the connection close only then, so a launch it makes next finds the run.
    try {
      await saveRun(storm, { file: start.lock.stateFile, config, launch: continued.launch, record: recordFile })
    } catch (error) {
      // An older state must not be continued as if it held this launch's calls.
      await rm(start.lock.stateFile, { force: true }).catch(() => undefined)
      printError(`Failed to save the run to ${start.lock.stateFile}: ${(error as Error).message}. The next launch begins a new run (this launch's report holds every call so far).`)
    } finally {
      start.lock.release()
    }
  }
  if (server.stats.serverNonJson > 0) printError(`the MCP server wrote ${server.stats.serverNonJson} line(s) to stdout that are not JSON-RPC messages (relayed to the client)`)
  // Nothing more will be read: a client still connected does not keep the process alive.
  process.stdin.destroy()
  await flushed(process.stdout)
  const failed = cassette?.verdict() ?? null
  if (failed !== null) {
    process.exitCode = failed
    return
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
