import type { Argv, CommandModule } from 'yargs'
import { ConfigError } from '../../errors.js'
import { SEED_LIMIT } from '../../engine/schema/config.js'
import { writeUserFile } from '../../io/write-file-atomic.js'
import { startProxy, type ProxyOptions, type ProxyServer } from '../../proxy/proxy-server.js'
import { LOOPBACK } from '../../proxy/server-pair.js'
import { parseAllowedHosts, splitAllowedHosts } from '../../proxy/allowed-hosts.js'
import { httpsOptionsFromArgs, interceptionLine, type HttpsArgs } from '../https-args.js'
import { keepHeapWarm } from '../keep-heap-warm.js'
import { LISTEN_PORT, numberListOption, numberOption } from '../numeric-options.js'
import { printError, printLine } from '../output.js'
import { commandEnvironment, runCommand } from '../run-command.js'
import { announceReady, readyInfo, readyOptions } from '../ready.js'
import { adminTokenLines, adminTokenOptions, adminTokenShown, type AdminTokenArgs } from '../admin-token.js'
import { onStopRequest, type StopOptions } from '../stop-request.js'
import { incidentsFromArgs, recordOptions, recorderFromArgs, type RecordArgs } from './record-options.js'
import type { FlightRecorder } from '../../incidents/flight-recorder.js'
import { cassetteAdminRoute } from '../../proxy/admin/cassette-admin-route.js'
import { DEFAULT_MAX_RUNS } from '../../engine/ledger/memory-ledger.js'
import { stateFromArgs, stateOptions, type StateArgs } from '../state-args.js'
import { describeOmitted, reportDocument, stormFromArgs } from '../storm-from-args.js'
import { cassetteWritten } from '../cassette-written.js'

// The storm, report and cassette lines every proxy-running command shares, from a module that does not load the proxy.
export { cassetteWritten, describeOmitted, reportDocument, stormFromArgs }

export interface ProxyArgs extends HttpsArgs, AdminTokenArgs {
  target: string[]
  port: number
  host: string
  'admin-port': number
  rules?: string
  seed?: number
  'admin-allow-host'?: string[]
  'allow-host'?: string[]
  report?: string
  clock: 'real' | 'virtual'
  'exit-with-parent': boolean
  'max-runs': number
}


/** The HTTPS flags of every proxy-running command (docs/https.md). */
export function httpsFlags<T>(yargs: Argv<T>): Argv<T> {
  return yargs
    // HTTPS (docs/https.md) ---------------------------------------------------------------
    .option('ca-dir', { type: 'string', describe: 'Forward mode: folder of the CA that intercepts HTTPS, created on first use (default: the folder "toolstorm ca" uses)' })
    .option('connect-port', { ...numberListOption('connect-port', { min: 1, max: 65_535 }), describe: 'Also allow CONNECT to this port (443 always is; repeatable)' })
    .option('tunnel-unmatched', { type: 'boolean', default: false, describe: 'Tunnel HTTPS to hosts no rule can apply to untouched, instead of intercepting every host' })
    .option('upstream-ca', { type: 'string', array: true, default: [] as string[], describe: 'Also trust this CA (PEM file) when verifying upstream HTTPS servers (repeatable)' })
    .option('insecure-skip-upstream-tls-verification', { type: 'boolean', default: false, describe: 'DANGEROUS: do not verify upstream HTTPS certificates' })
}

/** The options every proxy-running command shares (proxy, record, replay). */
export function proxyOptions<T>(yargs: Argv<T>): Argv<T & ProxyArgs> {
  return httpsFlags(
    adminTokenOptions(readyOptions(yargs))
    .option('target', { type: 'string', array: true, default: [] as string[], describe: 'Reverse mode: upstream URL, or name=URL mounted at /name/ (repeatable). Without it: forward mode (HTTP_PROXY).' })
    .option('port', { ...numberOption('port', LISTEN_PORT), default: 8787, describe: 'Proxy port (0 picks a free one)' })
    .option('host', { type: 'string', default: '127.0.0.1', describe: 'Interface to listen on (loopback unless you say otherwise)' })
    .option('admin-port', { ...numberOption('admin-port', LISTEN_PORT), default: 8788, describe: 'Admin API port (0 picks a free one)' })
    .option('rules', { type: 'string', describe: 'Rules file (JSON or YAML)' })
    .option('seed', { ...numberOption('seed', { min: -SEED_LIMIT, max: SEED_LIMIT, expected: 'an integer within ±(2^53−1)' }), describe: 'Seed (overrides the rules file)' })
    .option('admin-allow-host', { type: 'string', array: true, describe: 'Also answer the admin API addressed by this host name: toolstorm, *.svc.cluster.local, or * (repeatable; default: $TOOLSTORM_ADMIN_HOSTS)' })
    .option('allow-host', { type: 'string', array: true, describe: 'Also serve requests addressed to the proxy by this host name (DNS-rebinding check of Host): toolstorm, *.svc.cluster.local, or * (repeatable; default: $TOOLSTORM_ALLOW_HOSTS)' })
    .option('report', { type: 'string', describe: 'Write the report here on shutdown (atomically)' })
    .option('max-runs', { ...numberOption('max-runs', { min: 1, max: 10_000_000 }), default: DEFAULT_MAX_RUNS, describe: 'Runs kept in memory at most; past it the oldest is evicted (its report then answers ERR_RUN_EVICTED, and --report says how many were left out)' })
    .option('clock', { choices: ['real', 'virtual'] as const, default: 'real' as const, describe: 'virtual: latency faults advance time instead of waiting (tests only)' })
    .option('exit-with-parent', { type: 'boolean', default: true, describe: 'Stop (writing the report and cassette) when the process that started this one exits; --no-exit-with-parent keeps it running' }),
  )
    // Before yargs' validation: it would call the token's letters unknown flags (-A -b -c …).
    .middleware((args) => refuseEmptyToken(args['admin-token']), true) as unknown as Argv<T & ProxyArgs>
}

/** `--admin-token -abc…` reaches us empty (the value looks like a flag to the parser); never fall back to a random token silently. */
function refuseEmptyToken(token: string | undefined): void {
  if (token === '') throw new ConfigError('Failed to read --admin-token: it has no value. Give the token as --admin-token=<token> (required when it starts with "-").', { code: 'ERR_USAGE' })
}

/** Where and how the proxy listens, from the shared proxy flags. */
export function listenOptionsFromArgs(args: ProxyArgs): Pick<ProxyOptions, 'targets' | 'host' | 'port' | 'adminPort' | 'adminToken' | 'adminAllowHosts' | 'allowHosts'> {
  const token = args['admin-token']
  const adminHosts = hostsFromArgs(args['admin-allow-host'], '--admin-allow-host', 'TOOLSTORM_ADMIN_HOSTS')
  const dataHosts = hostsFromArgs(args['allow-host'], '--allow-host', 'TOOLSTORM_ALLOW_HOSTS')
  return {
    targets: args.target,
    host: args.host,
    port: args.port,
    adminPort: args['admin-port'],
    ...(token !== undefined ? { adminToken: token } : {}),
    ...(adminHosts ? { adminAllowHosts: adminHosts } : {}),
    ...(dataHosts ? { allowHosts: dataHosts } : {}),
  }
}

/** Host names from a flag, else its variable (comma- or space-separated), checked here so the error names where the bad entry came from. */
function hostsFromArgs(flag: string[] | undefined, flagName: string, variable: string): string[] | null {
  const [entries, source] = flag?.length ? [flag, flagName] : [splitAllowedHosts(process.env[variable]), variable]
  if (entries.length === 0) return null
  parseAllowedHosts(entries, source)
  return entries
}

/** The line printed at stop with `--incidents`: what was kept, evicted, and where. */
export function describeIncidents(flight: FlightRecorder): string {
  const { store, counts } = flight
  const evicted = store.evicted ? `; ${store.evicted} older ones deleted for the bounds (--max-incidents ${store.maxIncidents}, --max-bytes ${store.maxBytes})` : ''
  const large = store.tooLarge ? `; ${store.tooLarge} not kept, each alone over --max-bytes` : ''
  const dropped = counts.droppedExchanges ? `; ${counts.droppedExchanges} exchanges left out of runs' windows (--window-exchanges, --window-seconds)` : ''
  return `incidents: ${counts.kept} of ${counts.decided} runs kept in ${store.dir} (${store.incidents.length} there now, ${store.bytes} bytes)${evicted}${large}${dropped}`
}

/**
 * The banner: where the proxy listens, its token (only a generated one, to a terminal or when asked:
 * admin-token.ts) and dashboard, and (`caDir`) the CA that intercepts HTTPS. `toStderr`: where it goes.
 */
export function describeProxy(proxy: ProxyServer, caDir: string | null, args: AdminTokenArgs, toStderr: boolean): string[] {
  const where = proxy.mode === 'reverse' ? `reverse → ${proxy.targets.map((t) => (t.name ? `/${t.name}/ → ${t.url.href}` : t.url.href)).join(', ')}` : 'forward mode (set HTTP_PROXY)'
  return [
    `toolstorm proxy ${proxy.url} (${where}) · admin ${proxy.adminUrl}`,
    ...adminTokenLines(proxy.token, adminTokenShown(args, toStderr), `Authorization: Bearer <token>; tool servers report effects to ${proxy.adminUrl}/effects`, proxy.dashboardUrl),
    ...interceptionLine(caDir),
  ]
}

/**
 * Stop on SIGINT/SIGTERM or the parent's exit (stop-request.ts): close the proxy, then run `onStop`
 * (write files), then exit. Rejects with what `onStop` failed with (a cassette or report it could
 * not write), so the command exits with that error's code and message.
 */
export function stopOnSignals(proxy: ProxyServer, onStop: () => Promise<void>, options: StopOptions = {}): Promise<void> {
  return new Promise((resolve, reject) => {
    let stopping = false
    const dispose = onStopRequest(() => {
      if (stopping) return
      stopping = true
      void (async () => {
        await proxy.close()
        await onStop()
      })().then(resolve, reject).finally(dispose)
    }, options)
  })
}

export const proxyCommand: CommandModule<object, ProxyArgs & RecordArgs & StateArgs & { record?: string }> = {
  command: 'proxy',
  describe: 'Run the fault-injecting proxy (reverse mode with --target, forward mode without)',
  // Cassette recording (issue 4): --record FILE plus the options in record-options.ts.
  builder: (yargs: Argv) =>
    stateOptions(recordOptions(proxyOptions(yargs)).option('record', { type: 'string', describe: 'Record every exchange into this cassette (JSON Lines, written atomically)' })) as unknown as Argv<ProxyArgs & RecordArgs & StateArgs & { record?: string }>,
  async handler(args) {
    await runProxy(args, { name: 'proxy', file: args.record })
  },
}

/** What differs between the commands that run the proxy from its flags (`proxy`, `record`, `replay --mode record`). */
export interface ProxyRun {
  /** The command: in its errors and its ready line. */
  readonly name: 'proxy' | 'record'
  /** The cassette every exchange is recorded into (`record FILE`, `proxy --record FILE`); none: nothing is recorded. */
  readonly file?: string | undefined
  /** Run this with the proxy's URLs in its environment, then stop with its exit code; none: serve until SIGINT/SIGTERM. */
  readonly command?: readonly string[]
}

/** Run the proxy from its flags until the command ends or a stop is requested, then write the cassette and report; returns the exit code. */
export async function runProxy(args: ProxyArgs & RecordArgs & Partial<StateArgs>, run: ProxyRun): Promise<number> {
  keepHeapWarm()
  const command = run.command ?? []
  // Replicas started without rules take the shared ones; with rules (or a seed) they publish theirs. `replay --mode record` has no state flags.
  const state = args['state-prefix'] !== undefined ? stateFromArgs(args as StateArgs, args.rules === undefined && args.seed === undefined ? 'adopt' : 'publish') : null
  if (state && args.clock === 'virtual') throw new ConfigError(`Failed to start ${run.name === 'proxy' ? 'the proxy' : 'recording'}: --clock virtual with --state is not supported (replicas share Redis's clock).`, { code: 'ERR_USAGE' })
  const storm = await stormFromArgs(args)
  const shared = state ? await (await import('../../state/redis-run-state.js')).connectRedisState(storm, { ...state, onRulesApplied: (version) => printError(`rules version ${version} from the state store applied`) }) : null
  if (!LOOPBACK.has(args.host)) printError(`listening on ${args.host}: anyone who can reach it can use this proxy. Keep the admin token secret.`)
  // HTTPS through CONNECT is recorded like plain HTTP (docs/https.md); no host is tunnelled untouched while recording.
  const https = await httpsOptionsFromArgs(args, { recording: run.file !== undefined, announced: args['ready-json'] || args['ready-file'] !== undefined || command.length > 0 })
  // With --state, every replica records into Redis and the file holds every replica's exchanges (docs/scale-out.md).
  const recorder = run.file !== undefined ? recorderFromArgs(storm, run.file, args, shared) : null
  const giveUp = async (error: unknown) => {
    await recorder?.discard()
    await shared?.close()
    throw error
  }
  const opened = await recorder?.ready().catch(giveUp)
  if (opened) printError(opened.message)
  const incidents = incidentsFromArgs(args, recorder)
  const proxy = await startProxy({
    ...listenOptionsFromArgs(args),
    storm,
    ...https.options,
    warn: printError,
    ...(shared ? { state: shared, stateUnavailable: args['state-unavailable'] ?? 'fail' } : {}),
    ...(recorder ? { observer: recorder.observer, adminRoutes: [cassetteAdminRoute(recorder)] } : {}),
    ...(incidents ? { incidents } : {}),
  }).catch(giveUp)
  const writeFiles = async () => {
    try {
      if (recorder && run.file !== undefined) {
        await recorder.close()
        for (const line of await cassetteWritten(run.file, recorder, shared)) printError(line)
      }
      if (proxy.incidents) printError(describeIncidents(proxy.incidents))
      if (args.report) {
        // With --state: the run as every replica saw it.
        const document = await reportDocument(shared ?? storm.ledger)
        await writeUserFile('report', args.report, JSON.stringify(document, null, 2) + '\n')
        printError(`report written to ${args.report}`)
        const omitted = describeOmitted(document)
        if (omitted) printError(omitted)
      }
    } finally {
      await shared?.close()
    }
  }
  // With a command, its stdout stays its own: the banner goes to stderr.
  const banner = command.length ? printError : printLine
  const ready = readyInfo(run.name, proxy, run.file !== undefined ? { file: run.file, mode: 'record' } : undefined)
  if (command.length) {
    await announceReady(args, describeProxy(proxy, https.caDir, args, true), ready, banner)
    const code = await runCommand(command, commandEnvironment({ proxyUrl: proxy.url, adminUrl: proxy.adminUrl, adminToken: proxy.token, mode: proxy.mode, caFile: https.caFile }), { exitWithParent: args['exit-with-parent'] })
    await proxy.close()
    await writeFiles()
    return code
  }
  // Signal handlers first: whoever reads the printed address may stop the proxy right away.
  const stopped = stopOnSignals(proxy, writeFiles, { exitWithParent: args['exit-with-parent'] })
  await announceReady(args, describeProxy(proxy, https.caDir, args, false), ready, banner)
  await stopped
  return 0
}
