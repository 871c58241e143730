/**
 * `toolstorm replay FILE [--port P] [-- <command>]`: serve a cassette with no upstream, as a base
 * URL or an HTTP proxy. With a command, run it against the replay, then exit 1 when the replay
 * failed (a mismatch, an extra or an unused exchange, a response cut at the body limit) and with
 * the command's code otherwise.
 * Without a command, serve until SIGINT/SIGTERM, then exit with the verdict.
 */
import type { Argv, CommandModule } from 'yargs'
import { Cassette } from '../../cassette/format/cassette.js'
import { replayReport } from '../../cassette/replay/replay-report.js'
import { formatReplayTable } from '../../cassette/replay/replay-table.js'
import { startReplayServer } from '../../proxy/replay/replay-server.js'
import type { ReplayServerMode } from '../../proxy/replay/replay-server-options.js'
import { REPLAY_SPEEDS, type ReplaySpeed } from '../../cassette/replay/replay-stream.js'
import { ERROR_CODES } from '../../errors.js'
import { createRedactor } from '../../redact/index.js'
import { writeUserFile } from '../../io/write-file-atomic.js'
import { LOOPBACK } from '../../proxy/server-pair.js'
import { httpsOptionsFromArgs, interceptionLine } from '../https-args.js'
import { printError, printLine } from '../output.js'
import { commandEnvironment, runCommand } from '../run-command.js'
import { untilStopRequested } from '../stop-request.js'
import { keepHeapWarm } from '../keep-heap-warm.js'
import { announceReady, readyInfo } from '../ready.js'
import { adminTokenLines, adminTokenShown } from '../admin-token.js'
import { listenOptionsFromArgs, proxyOptions, runProxy, stormFromArgs, type ProxyArgs } from './proxy.js'
import { recordOptions, type RecordArgs } from './record-options.js'
import { matchFromArgs } from './match-options.js'
import { commandAfterDashes } from './record.js'

interface ReplayArgs extends ProxyArgs, RecordArgs {
  file: string
  mode: ReplayServerMode | 'record'
  order: 'strict' | 'any'
  'allow-repeats': boolean
  'allow-unused': boolean
  'allow-truncated': boolean
  speed: ReplaySpeed
  json: boolean
  contracts: boolean
  live: string[]
  'replay-only': string[]
  '--'?: Array<string | number>
}

export const replayCommand: CommandModule<object, ReplayArgs> = {
  command: 'replay <file>',
  describe: 'Serve a cassette with no upstream (base URL or HTTP proxy); strict by default',
  builder: (yargs: Argv) =>
    recordOptions(proxyOptions(yargs.parserConfiguration({ 'populate--': true, 'parse-positional-numbers': false }).positional('file', { type: 'string', demandOption: true, describe: 'Cassette (JSON Lines)' })))
      .option('mode', {
        choices: ['replay', 'update', 'passthrough-unmatched', 'record'] as const,
        default: 'replay' as const,
        describe: 'replay: never reach the network. passthrough-unmatched: forward what matches nothing. update: forward and record it, then rewrite the cassette. record: record anew (as `toolstorm record`).',
      })
      .option('order', { choices: ['strict', 'any'] as const, default: 'strict' as const, describe: 'strict: requests must come in recorded order. any: each takes the first unused exchange it matches.' })
      .option('allow-repeats', { type: 'boolean', default: false, describe: 'A repeated request replays its exchange again instead of failing as extra' })
      .option('allow-unused', { type: 'boolean', default: false, describe: 'Recorded exchanges never requested do not fail the replay' })
      .option('allow-truncated', { type: 'boolean', default: false, describe: 'Responses whose body was cut at the body limit when recorded do not fail the replay (they still break off after the stored prefix)' })
      .option('live', { type: 'string', array: true, default: [] as string[], describe: 'Route glob (as in rules: a route name or "METHOD /path") sent to the network instead of replayed, under the same rules; outside the verdict (repeatable)' })
      .option('replay-only', { type: 'string', array: true, default: [] as string[], describe: 'Route glob that replays; every other route goes to the network (repeatable)' })
      .option('contracts', { type: 'boolean', default: true, describe: 'Run the contracts on what was served: an effect committed twice in the served exchanges fails the replay (exit 1, ERR_CONTRACT_FAILED); --no-contracts to skip' })
      .option('json', { type: 'boolean', default: false, describe: 'Print the replay report (verdict, table, each miss\'s diff) as JSON on stdout when the replay ends' })
      .option('speed', { choices: REPLAY_SPEEDS, default: 'instant' as ReplaySpeed, describe: 'Event streams: instant sends the recorded events at once; recorded keeps the time between them' })
      .example('$0 replay incident.cassette.jsonl --port 0 -- node agent.js', 'the agent calls $TOOLSTORM_PROXY_URL (or uses HTTP_PROXY); exit 1 if the replay diverged') as unknown as Argv<ReplayArgs>,
  async handler(args) {
    const command = commandAfterDashes(args)
    if (args.mode === 'record') {
      process.exitCode = await runProxy(args, { name: 'record', file: args.file, command })
      return
    }
    keepHeapWarm()
    if (!LOOPBACK.has(args.host)) printError(`listening on ${args.host}: anyone who can reach it can read this cassette. Keep the admin token secret.`)
    const cassette = await Cassette.load(args.file)
    const storm = await stormFromArgs(args)
    const config = storm.config
    const recordedSecrets = cassette.header.redaction.secrets
    if (recordedSecrets > 0 && config.redact.secrets.length === 0) {
      printError(`${args.file} was recorded with ${recordedSecrets} literal secret(s): pass the same --rules file (its "redact" section) so requests are redacted, and match, as they were recorded.`)
    }
    if (args['tunnel-unmatched']) printError('--tunnel-unmatched is ignored by replay: every CONNECT is answered from the cassette.')
    // HTTPS: the CA "toolstorm ca" made (or --ca-dir) when the cassette holds HTTPS exchanges or a folder is named.
    const holdsHttps = cassette.exchanges.some((exchange) => exchange.request.url.startsWith('https://'))
    const { options: { tunnelUnmatched: _tunnel, ...https }, caDir, caFile } = await httpsOptionsFromArgs(args, { openCa: args['ca-dir'] !== undefined || holdsHttps, announced: args['ready-json'] || args['ready-file'] !== undefined || command.length > 0 })
    const replay = await startReplayServer(cassette, {
      ...https,
      warn: printError,
      mode: args.mode,
      ...listenOptionsFromArgs(args),
      storm,
      order: args.order,
      allowRepeats: args['allow-repeats'],
      allowUnused: args['allow-unused'],
      allowTruncated: args['allow-truncated'],
      speed: args.speed,
      live: args.live.map(String),
      replayOnly: args['replay-only'].map(String),
      match: matchFromArgs(args),
      redactor: createRedactor({ keys: [...cassette.header.redaction.keys, ...config.redact.keys], secrets: config.redact.secrets }),
    })
    const banner = command.length ? printError : printLine
    const lines = [
      `toolstorm replay ${replay.url} (${cassette.exchanges.length} exchanges from ${args.file}, mode ${replay.mode}, order ${replay.session.order}) · admin ${replay.adminUrl}`,
      ...adminTokenLines(replay.token, adminTokenShown(args, banner === printError), `GET ${replay.adminUrl}/report for the verdict`, null),
      ...interceptionLine(caDir),
    ]
    let code = 0
    const ready = readyInfo('replay', replay.proxy, { file: args.file, mode: replay.mode, exchanges: cassette.exchanges.length })
    if (command.length) {
      await announceReady(args, lines, ready, banner)
      code = await runCommand(command, commandEnvironment({ proxyUrl: replay.url, adminUrl: replay.adminUrl, adminToken: replay.token, caFile }), { exitWithParent: args['exit-with-parent'] })
    } else {
      const stopped = untilStopRequested({ exitWithParent: args['exit-with-parent'] })
      await announceReady(args, lines, ready, banner)
      await stopped
    }
    const replayed = await replay.close()
    const report = replayReport(replay.session, replay.mode, { contracts: args.contracts })
    const verdict = { ...replayed, passed: report.passed, code: report.code, message: report.message }
    if (args.report) {
      await writeUserFile('replay report', args.report, JSON.stringify(report, null, 2) + '\n')
      printError(`replay report written to ${args.report}`)
    }
    if (args.json) printLine(JSON.stringify(report, null, 2))
    if (args.mode === 'update') printError(`cassette rewritten: ${args.file}`)
    if (verdict.passed) {
      printError(verdict.message)
      process.exitCode = code
      return
    }
    printError(verdict.message)
    if (verdict.code !== 'ERR_CONTRACT_FAILED') for (const line of formatReplayTable(verdict.rows).split('\n')) process.stderr.write(`  ${line}\n`)
    process.stderr.write(`  (${verdict.code})\n`)
    process.exitCode = ERROR_CODES[verdict.code as keyof typeof ERROR_CODES].exit
  },
}
