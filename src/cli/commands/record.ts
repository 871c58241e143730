/**
 * `toolstorm record FILE [proxy options] [-- <command>]`: run the proxy, record every exchange
 * into FILE, and (with a command) run it with the proxy's URLs in its environment, then exit
 * with its exit code. Without a command it records until SIGINT/SIGTERM.
 */
import type { Argv, CommandModule } from 'yargs'
import { writeFileAtomic } from '../../io/write-file-atomic.js'
import { startProxy } from '../../proxy/proxy-server.js'
import { cassetteAdminRoute } from '../../proxy/admin/cassette-admin-route.js'
import { httpsOptionsFromArgs } from '../https-args.js'
import { printError, printLine } from '../output.js'
import { commandEnvironment, runCommand } from '../run-command.js'
import { untilStopRequested } from '../stop-request.js'
import { cassetteWritten, describeIncidents, describeOmitted, describeProxy, listenOptionsFromArgs, proxyOptions, reportDocument, stormFromArgs, type ProxyArgs } from './proxy.js'
import { ConfigError } from '../../errors.js'
import { stateFromArgs, stateOptions, type StateArgs } from '../state-args.js'
import { incidentsFromArgs, recordOptions, recorderFromArgs, type RecordArgs } from './record-options.js'
import { keepHeapWarm } from '../keep-heap-warm.js'
import { announceReady, readyInfo } from '../ready.js'

export interface RecordCommandArgs extends ProxyArgs, RecordArgs, Partial<StateArgs> {
  file: string
  '--'?: Array<string | number>
}

/** The command after `--`, as strings. */
export function commandAfterDashes(args: { '--'?: Array<string | number> }): string[] {
  return (args['--'] ?? []).map(String)
}

/** Record into `file` through a proxy; returns the exit code. */
export async function runRecording(file: string, args: ProxyArgs & RecordArgs & Partial<StateArgs>, command: readonly string[]): Promise<number> {
  keepHeapWarm()
  // With --state this recorder is one replica (replay's --record passes no state flags): its exchanges go to Redis with the others' (docs/scale-out.md).
  const state = args['state-prefix'] !== undefined ? stateFromArgs(args as StateArgs, args.rules === undefined && args.seed === undefined ? 'adopt' : 'publish') : null
  if (state && args.clock === 'virtual') throw new ConfigError('Failed to start recording: --clock virtual with --state is not supported (replicas share Redis\'s clock).', { code: 'ERR_USAGE' })
  const storm = await stormFromArgs(args)
  const shared = state ? await (await import('../../state/redis-run-state.js')).connectRedisState(storm, state) : null
  // HTTPS through CONNECT is recorded like plain HTTP (docs/https.md); no host is tunnelled untouched.
  const https = await httpsOptionsFromArgs(args, { recording: true, announced: args['ready-json'] || args['ready-file'] !== undefined || command.length > 0 })
  const recorder = recorderFromArgs(storm, file, args, shared)
  const giveUp = async (error: unknown) => {
    await recorder.discard()
    await shared?.close()
    throw error
  }
  const opened = await recorder.ready().catch(giveUp)
  if (opened) printError(opened.message)
  const proxy = await startProxy({
    ...listenOptionsFromArgs(args),
    storm,
    ...https.options,
    warn: printError,
    observer: recorder.observer,
    adminRoutes: [cassetteAdminRoute(recorder)],
    ...(incidentsFromArgs(args, recorder) ? { incidents: incidentsFromArgs(args, recorder) } : {}),
    ...(shared ? { state: shared, stateUnavailable: args['state-unavailable'] ?? 'fail' } : {}),
  }).catch(giveUp)
  // With a command, its stdout stays its own: the banner goes to stderr.
  const banner = command.length ? printError : printLine
  let code = 0
  const ready = readyInfo('record', proxy, { file, mode: 'record' })
  if (command.length) {
    await announceReady(args, describeProxy(proxy, https.caDir, args, banner === printError), ready, banner)
    code = await runCommand(command, commandEnvironment({ proxyUrl: proxy.url, adminUrl: proxy.adminUrl, adminToken: proxy.token, mode: proxy.mode, caFile: https.caFile }), { exitWithParent: args['exit-with-parent'] })
  } else {
    const stopped = untilStopRequested({ exitWithParent: args['exit-with-parent'] })
    await announceReady(args, describeProxy(proxy, https.caDir, args, banner === printError), ready, banner)
    await stopped
  }
  await proxy.close()
  try {
    await recorder.close()
    for (const line of await cassetteWritten(file, recorder, shared)) printError(line)
    if (proxy.incidents) printError(describeIncidents(proxy.incidents))
    if (args.report) {
      const document = await reportDocument(shared ?? storm.ledger)
      await writeFileAtomic(args.report, JSON.stringify(document, null, 2) + '\n')
      printError(`report written to ${args.report}`)
      const omitted = describeOmitted(document)
      if (omitted) printError(omitted)
    }
  } finally {
    await shared?.close()
  }
  return code
}

export const recordCommand: CommandModule<object, RecordCommandArgs> = {
  command: 'record <file>',
  describe: 'Record the traffic of a command (after --) or of any client into a cassette',
  builder: (yargs: Argv) =>
    stateOptions(recordOptions(proxyOptions(yargs.parserConfiguration({ 'populate--': true, 'parse-positional-numbers': false }).positional('file', { type: 'string', demandOption: true, describe: 'Cassette to write (JSON Lines)' })))
      .example('$0 record incident.cassette.jsonl --target https://api.example.com -- node agent.js', 'the agent calls $TOOLSTORM_PROXY_URL; its exit code is kept')
      .example('$0 record incident.cassette.jsonl -- python agent.py', 'forward mode: HTTP_PROXY is set for the command')
      .example('$0 record run.cassette.jsonl --state redis://redis:6379 --target http://tools:4000 -- node agent.js', 'one replica of several: the cassette holds every replica\'s exchanges of the runs it served')) as unknown as Argv<RecordCommandArgs>,
  async handler(args) {
    process.exitCode = await runRecording(args.file, args, commandAfterDashes(args))
  },
}
