/**
 * `toolstorm explore [proxy options] -- <command>`: which faults does the agent not survive?
 * The command runs once with no fault (it must pass), then once per (call site × fault that call
 * can have); the matrix is printed, written as JSON, JUnit or HTML, and every failure becomes a
 * counterexample (`--out`). Exit 0 when every exercised variation passes (or every failure is
 * known), 1 on a new failure, 2 on bad input or a failing baseline, 127 when the command is not
 * found. A thin shell over `explore()` (src/explore/explore.ts).
 */
import type { Argv, CommandModule } from 'yargs'
import { explore } from '../../explore/explore.js'
import { formatExplore, formatProgressLine, formatProgressStatus } from '../../explore/format-matrix.js'
import { formatJunit } from '../../explore/junit.js'
import { formatHtml } from '../../explore/html-page.js'
import { loadAllowList, loadExploreBaseline } from '../../explore/known-failures.js'
import type { Progress } from '../../explore/scheduler.js'
import { loadConfigFile } from '../../io/load-config-file.js'
import { writeFileAtomic } from '../../io/write-file-atomic.js'
import { SEED_LIMIT } from '../../engine/schema/config.js'
import { LOOPBACK } from '../../proxy/server-pair.js'
import { httpsOptionsFromArgs, type HttpsArgs } from '../https-args.js'
import { LISTEN_PORT, numberOption } from '../numeric-options.js'
import { printError, printLine } from '../output.js'
import { onStopRequest } from '../stop-request.js'
import { commandAfterDashes } from './record.js'
import { httpsFlags } from './proxy.js'
import { ConfigError } from '../../errors.js'

const COUNT = { min: 0, max: Number.MAX_SAFE_INTEGER, expected: 'a nonnegative integer' }

interface ExploreArgs extends HttpsArgs {
  target: string[]
  host: string
  port: number
  'admin-port': number
  rules?: string
  seed?: number
  faults: string[]
  config?: string
  route: string[]
  'max-ordinal': number
  depth: number
  jobs: number
  'max-runs'?: number
  'time-budget'?: number
  'run-timeout': number
  'max-calls'?: number
  'max-model-calls'?: number
  'max-tokens'?: number
  'max-recovery-tokens'?: number
  claims: boolean
  only: string[]
  json?: string
  junit?: string
  html?: string
  out?: string
  baseline?: string
  allow?: string
  verbose: boolean
  '--'?: Array<string | number>
}

/** `--faults a,b --faults c`: names, comma-separated or repeated. */
function splitList(values: unknown): string[] {
  return (Array.isArray(values) ? values : [values]).flatMap((value) => String(value).split(',')).map((name) => name.trim()).filter((name) => name !== '')
}

/** The flags the counterexamples' live command repeats: those that shape the space and the verdict. */
function rerunFlags(args: ExploreArgs): string[] {
  const flags: string[] = []
  for (const target of args.target) flags.push('--target', target)
  // A tool server started outside the command reports to a fixed admin port; an agent may be told a fixed proxy port.
  if (args.port !== 0) flags.push('--port', String(args.port))
  if (args['admin-port'] !== 0) flags.push('--admin-port', String(args['admin-port']))
  if (args.rules) flags.push('--rules', args.rules)
  if (args.seed !== undefined) flags.push('--seed', String(args.seed))
  if (args.faults.length) flags.push('--faults', args.faults.join(','))
  if (args.config) flags.push('--config', args.config)
  for (const route of args.route) flags.push('--route', route)
  if (args['max-ordinal'] !== 3) flags.push('--max-ordinal', String(args['max-ordinal']))
  if (args['run-timeout'] !== 60) flags.push('--run-timeout', String(args['run-timeout']))
  for (const name of ['max-calls', 'max-model-calls', 'max-tokens', 'max-recovery-tokens'] as const) if (args[name] !== undefined) flags.push(`--${name}`, String(args[name]))
  if (!args.claims) flags.push('--no-claims')
  if (args['ca-dir']) flags.push('--ca-dir', args['ca-dir'])
  for (const port of args['connect-port']) flags.push('--connect-port', String(port))
  for (const ca of args['upstream-ca']) flags.push('--upstream-ca', ca)
  return flags
}

export const exploreCommand: CommandModule<object, ExploreArgs> = {
  command: 'explore',
  describe: 'Find the faults an agent does not survive: run it once per (call site × fault), each failure a counterexample',
  builder: (yargs: Argv) =>
    httpsFlags(
      yargs
        .parserConfiguration({ 'populate--': true })
        .usage('$0 explore [options] -- <command>\n\nRun the command once with no fault (it must pass), then once per call site × fault that call can have.')
        .option('target', { type: 'string', array: true, default: [] as string[], describe: 'Reverse mode: upstream URL, or name=URL mounted at /name/ (repeatable); the command gets the base URL in TOOLSTORM_PROXY_URL. Without it: forward mode (HTTP_PROXY)' })
        .option('host', { type: 'string', default: '127.0.0.1', describe: 'Interface the proxy listens on (loopback unless you say otherwise)' })
        .option('port', { ...numberOption('port', LISTEN_PORT), default: 0, describe: 'Proxy port (default 0: a free one, given to the command in TOOLSTORM_PROXY_URL or HTTP_PROXY)' })
        .option('admin-port', { ...numberOption('admin-port', LISTEN_PORT), default: 0, describe: 'Admin API port (default 0: a free one, given to the command in TOOLSTORM_SIDECAR). Set it for a tool server started outside the command: it reports its commits to http://127.0.0.1:PORT' })
        .option('rules', { type: 'string', describe: 'Rules file with named routes, redaction and MCP endpoints (no rules: explore makes them)' })
        .option('seed', { ...numberOption('seed', { min: -SEED_LIMIT, max: SEED_LIMIT, expected: 'an integer within ±(2^53−1)' }), describe: 'Seed of every run (default: the rules file\'s, else 0)' })
        .option('faults', { type: 'string', array: true, default: [] as string[], coerce: splitList, describe: 'Only these faults (names of the table or fault kinds, comma-separated or repeated)' })
        .option('config', { type: 'string', describe: 'Explore config (JSON or YAML): the fault table, per route (docs/explore.md)' })
        .option('route', { type: 'string', array: true, default: [] as string[], describe: 'Only routes matching this glob (repeatable)' })
        .option('max-ordinal', { ...numberOption('max-ordinal', { min: 1, max: 100 }), default: 3, describe: 'Call sites up to this ordinal per route' })
        .option('depth', { ...numberOption('depth', { min: 1, max: 2 }), default: 1, describe: '2: pairs of faults too, after the single ones' })
        .option('jobs', { ...numberOption('jobs', { min: 1, max: 64 }), default: 1, describe: 'Runs at once (the matrix is the same for any value)' })
        .option('max-runs', { ...numberOption('max-runs', { min: 1, max: 1_000_000 }), describe: 'At most this many variations, the most informative first' })
        .option('time-budget', { ...numberOption('time-budget', { min: 1, max: 7 * 86_400, integer: false }), describe: 'Seconds: start no variation after this' })
        .option('run-timeout', { ...numberOption('run-timeout', { min: 0.1, max: 86_400, integer: false }), default: 60, describe: 'Seconds a run may take; then it is killed and fails as a hang' })
        .option('max-calls', { ...numberOption('max-calls', COUNT), describe: 'Fail a run that made more calls' })
        .option('max-model-calls', { ...numberOption('max-model-calls', COUNT), describe: 'Fail a run that made more model calls' })
        .option('max-tokens', { ...numberOption('max-tokens', COUNT), describe: 'Fail a run whose model calls used more tokens (or reported no usage)' })
        .option('max-recovery-tokens', { ...numberOption('max-recovery-tokens', COUNT), describe: 'Fail a run whose recovery from a fault took more tokens' })
        .option('claims', { type: 'boolean', default: true, describe: 'When the agent reports claims, fail a run whose claims the effects contradict; --no-claims to skip' })
        .option('only', { type: 'string', array: true, default: [] as string[], coerce: splitList, describe: 'Run only these variations (ids an earlier explore printed)' })
        .option('json', { type: 'string', requiresArg: true, describe: 'Write the result as JSON to this file (- for stdout)' })
        .option('junit', { type: 'string', describe: 'Write a JUnit XML report to this file' })
        .option('html', { type: 'string', describe: 'Write a self-contained HTML page to this file' })
        .option('out', { type: 'string', describe: 'Write a counterexample folder per failure here (rules, seed, cassette, commands)' })
        .option('baseline', { type: 'string', describe: 'An earlier --json: fail only on failures it does not have' })
        .option('allow', { type: 'string', describe: 'Allow list (JSON or YAML, {allow: [id, {id, reason}]}): failures accepted' })
        .option('verbose', { type: 'boolean', default: false, describe: "Show every run's output as it comes (stderr)" })
        .example('$0 explore -- python agent.py', 'forward mode: the agent reads HTTP_PROXY')
        .example('$0 explore --target http://127.0.0.1:4000 --jobs 4 --out counterexamples -- node agent.js', 'the agent calls $TOOLSTORM_PROXY_URL'),
    ) as unknown as Argv<ExploreArgs>,
  async handler(args) {
    const command = commandAfterDashes(args)
    if (command.length === 0) throw new ConfigError('Failed to explore: no command to run. Give it after "--": toolstorm explore -- python agent.py', { code: 'ERR_USAGE' })
    if (!LOOPBACK.has(args.host)) printError(`listening on ${args.host}: anyone who can reach it can use this proxy while explore runs.`)
    const base = args.rules ? await loadConfigFile(args.rules) : undefined
    const baseline = args.baseline ? await loadExploreBaseline(args.baseline) : undefined
    const allow = args.allow ? await loadAllowList(args.allow) : undefined
    // Forward mode: explore's runner opens the CA before the baseline (each run is told to trust it), once the options are checked.
    const https = await httpsOptionsFromArgs(args, { recording: true })
    const controller = new AbortController()
    const stop = onStopRequest(() => {
      if (!controller.signal.aborted) printError('stopping: the runs under way are killed; what ran is reported')
      controller.abort()
    })
    const tty = process.stderr.isTTY === true
    let status = ''
    const onProgress = (progress: Progress) => {
      if (tty) {
        status = formatProgressStatus(progress)
        process.stderr.write(`\r\x1b[K${status}`)
        if (progress.last.verdict.status === 'fail') process.stderr.write(`\r\x1b[K${formatProgressLine(progress)}\n${status}`)
      } else process.stderr.write(`${formatProgressLine(progress)}\n`)
    }
    try {
      const { result } = await explore({
        command,
        proxy: { targets: args.target, host: args.host, port: args.port, adminPort: args['admin-port'], ...https.options },
        ...(base ? { rules: base } : {}),
        ...(args.config ? { config: args.config } : {}),
        ...(args.faults.length ? { faults: args.faults } : {}),
        routes: args.route.map(String),
        maxOrdinal: args['max-ordinal'],
        depth: args.depth === 2 ? 2 : 1,
        jobs: args.jobs,
        ...(args.seed !== undefined ? { seed: args.seed } : {}),
        ...(args['max-runs'] !== undefined ? { maxRuns: args['max-runs'] } : {}),
        ...(args['time-budget'] !== undefined ? { timeBudget: args['time-budget'] } : {}),
        runTimeout: args['run-timeout'],
        checks: { maxCalls: args['max-calls'], maxModelCalls: args['max-model-calls'], maxTokens: args['max-tokens'], maxRecoveryTokens: args['max-recovery-tokens'], claims: args.claims },
        ...(args.only.length ? { only: args.only } : {}),
        ...(baseline || allow ? { known: { baseline, allow } } : {}),
        ...(args.out ? { out: args.out } : {}),
        rerunFlags: rerunFlags(args),
        onProgress,
        ...(args.verbose ? { onOutput: (run: string, chunk: Buffer) => process.stderr.write(chunk.toString('utf8').replace(/^(?=.)/gm, `[${run}] `)) } : {}),
        signal: controller.signal,
      })
      if (tty && status) process.stderr.write('\r\x1b[K')
      if (args.json) {
        const text = JSON.stringify(result, null, 2) + '\n'
        if (args.json === '-') process.stdout.write(text)
        else await writeFileAtomic(args.json, text)
      }
      if (args.junit) await writeFileAtomic(args.junit, formatJunit(result))
      if (args.html) await writeFileAtomic(args.html, formatHtml(result))
      if (args.json !== '-') for (const line of formatExplore(result)) printLine(line)
      for (const [file, what] of [[args.json, 'JSON'], [args.junit, 'JUnit'], [args.html, 'HTML']] as const) if (file && file !== '-') printError(`${what} written to ${file}`)
      process.exitCode = controller.signal.aborted ? 130 : result.exitCode
    } finally {
      stop()
    }
  },
}
