/**
 * `toolstorm record FILE [proxy options] [-- <command>]`: run the proxy, record every exchange
 * into FILE, and (with a command) run it with the proxy's URLs in its environment, then exit
 * with its exit code. Without a command it records until SIGINT/SIGTERM.
 */
import type { Argv, CommandModule } from 'yargs'
import { writeFileAtomic } from '../../io/write-file-atomic.js'
import { startProxy } from '../../proxy/proxy-server.js'
import { cassetteAdminRoute } from '../../cassette/cassette-admin-route.js'
import { httpsOptionsFromArgs } from '../https-args.js'
import { printError, printLine } from '../output.js'
import { commandEnvironment, runCommand, untilSignal } from '../run-command.js'
import { describeProxy, listenOptionsFromArgs, proxyOptions, reportDocument, stormFromArgs, type ProxyArgs } from './proxy.js'
import { recordOptions, recorderFromArgs, type RecordArgs } from './record-options.js'
import { keepHeapWarm } from '../keep-heap-warm.js'

export interface RecordCommandArgs extends ProxyArgs, RecordArgs {
  file: string
  '--'?: Array<string | number>
}

/** The command after `--`, as strings. */
export function commandAfterDashes(args: { '--'?: Array<string | number> }): string[] {
  return (args['--'] ?? []).map(String)
}

/** Record into `file` through a proxy; returns the exit code. */
export async function runRecording(file: string, args: ProxyArgs & RecordArgs, command: readonly string[]): Promise<number> {
  keepHeapWarm()
  const storm = await stormFromArgs(args)
  // HTTPS through CONNECT is recorded like plain HTTP (docs/https.md); no host is tunnelled untouched.
  const https = await httpsOptionsFromArgs(args, { recording: true })
  const recorder = recorderFromArgs(storm, file, args)
  await recorder.ready().catch(async (error: unknown) => {
    await recorder.discard()
    throw error
  })
  const proxy = await startProxy({
    ...listenOptionsFromArgs(args),
    storm,
    ...https,
    warn: printError,
    observer: recorder.observer,
    adminRoutes: [cassetteAdminRoute(recorder)],
  }).catch(async (error: unknown) => {
    await recorder.discard()
    throw error
  })
  // With a command, its stdout stays its own: the banner goes to stderr.
  const banner = command.length ? printError : printLine
  let code = 0
  if (command.length) {
    for (const line of describeProxy(proxy)) banner(line)
    code = await runCommand(command, commandEnvironment({ proxyUrl: proxy.url, adminUrl: proxy.adminUrl, adminToken: proxy.token, httpProxy: proxy.mode === 'forward', httpsProxy: proxy.mode === 'forward' }))
  } else {
    const stopped = untilSignal()
    for (const line of describeProxy(proxy)) banner(line)
    await stopped
  }
  await proxy.close()
  await recorder.close()
  printError(`cassette written to ${file} (${recorder.size} exchanges)`)
  if (args.report) {
    await writeFileAtomic(args.report, JSON.stringify(reportDocument(storm), null, 2) + '\n')
    printError(`report written to ${args.report}`)
  }
  return code
}

export const recordCommand: CommandModule<object, RecordCommandArgs> = {
  command: 'record <file>',
  describe: 'Record the traffic of a command (after --) or of any client into a cassette',
  builder: (yargs: Argv) =>
    recordOptions(proxyOptions(yargs.parserConfiguration({ 'populate--': true, 'parse-positional-numbers': false }).positional('file', { type: 'string', demandOption: true, describe: 'Cassette to write (JSON Lines)' })))
      .example('$0 record incident.cassette.jsonl --target https://api.example.com -- node agent.js', 'the agent calls $TOOLSTORM_PROXY_URL; its exit code is kept')
      .example('$0 record incident.cassette.jsonl -- python agent.py', 'forward mode: HTTP_PROXY is set for the command') as unknown as Argv<RecordCommandArgs>,
  async handler(args) {
    process.exitCode = await runRecording(args.file, args, commandAfterDashes(args))
  },
}
