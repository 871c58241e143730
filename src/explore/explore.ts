/**
 * `explore()`: which faults does the agent not survive? Run it once with none (it must pass),
 * learn its call sites, then run it once per (call site × fault that call can have), keep what
 * fails, and hand each failure back as a counterexample (its rules, seed and cassette).
 *
 * @example
 * const { result } = await explore({ command: ['python', 'agent.py'], jobs: 4 })
 * result.variations.filter((variation) => variation.status === 'fail')
 * @see ../../docs/explore.md
 */
import { z } from 'zod'
import { ConfigError, ToolstormError } from '../errors.js'
import { parseConfig, stormPlugins } from '../create-storm.js'
import { protocolHooksOf } from '../engine/protocol-hooks.js'
import { createRedactor } from '../redact/index.js'
import type { StormConfig, StormConfigInput } from '../engine/schema/config.js'
import type { DeltaReader } from '../engine/streams/deltas.js'
import { VERSION } from '../version.js'
import { docsUrl } from '../docs-url.js'
import { fn, object, optionsSchema, checkOptions, type OptionsShape } from '../options/check-options.js'
import { callSitesOf, callsPerRoute, describeKind, type CallSite } from './call-sites.js'
import { DEFAULT_EXPLORE_CONFIG, loadExploreConfig, parseExploreConfig, type ExploreConfig, type ExploreConfigInput } from './explore-config.js'
import { EXPLORE_KIND, exitCodeOf, type ExploreResult, type ExploreSite, type ExploreVariationResult } from './explore-result.js'
import { faultsNamed } from './fault-catalogue.js'
import { startCommandRunner, type ExploreProxyOptions } from './command-runner.js'
import { startInProcessRunner, type ExploreRunContext, type InProcessOptions } from './in-process-runner.js'
import type { RunOutcome, VariationRunner } from './runner.js'
import { Scheduler, type Executed, type Progress } from './scheduler.js'
import { FaultSpace, type Skip } from './space.js'
import { contractOf, exitCheck, type ExploreChecks } from './verdict.js'
import { applyKnown, type KnownFailures } from './known-failures.js'
import { shellWord, writeCounterexampleCassette, writeCounterexamples } from './counterexamples.js'
import { stepRuleName, type Variation } from './variation.js'

export interface ExploreOptions {
  /** The command to explore (`['python', 'agent.py']`): each variation is one run of it next to a proxy. */
  command?: readonly string[]
  /** Or a function explored in this process, through `intercept()`: each variation is one call of it with a storm of its own. */
  run?: (context: ExploreRunContext) => unknown
  /** Command mode: where the proxy listens, its `--target`s, HTTPS (`startProxy()`'s options). */
  proxy?: ExploreProxyOptions
  /** `run` mode: `intercept()`'s options (`targets`, …). */
  intercept?: InProcessOptions['intercept']
  /** `run` mode: a clock per run (a `VirtualClock` for a lab). */
  clock?: InProcessOptions['clock']
  /** The proxy's own rules: named routes, redaction, MCP endpoints. Its `rules` must be empty: explore makes them. */
  rules?: StormConfigInput | StormConfig
  /** The explore config (a file name, or the document): the fault table, per route. */
  config?: string | ExploreConfigInput
  /** Only these faults of the table (or fault kinds): `['timeout', 'response_lost']`. */
  faults?: readonly string[]
  /** Only routes matching one of these globs. */
  routes?: readonly string[]
  /** Call sites up to this ordinal per route (default 3). */
  maxOrdinal?: number
  /** 2: pairs of faults too, after the single ones (default 1). */
  depth?: 1 | 2
  /** Runs at once (default 1). The matrix is the same for any value. */
  jobs?: number
  /** The seed of every run's rules (default 0). */
  seed?: number
  /** At most this many variations, the most informative first. */
  maxRuns?: number
  /** Seconds: start no variation after this. */
  timeBudget?: number
  /** Seconds a run may take before it is killed and fails as a hang (default 60). */
  runTimeout?: number
  /** Contracts besides the exit code and no duplicate effects. */
  checks?: ExploreChecks
  /** Run only these variations (ids from an earlier explore). */
  only?: readonly string[]
  /** Extra environment for the command. */
  env?: Readonly<Record<string, string>>
  /** Earlier failures (`--baseline`) and accepted ones (`--allow`): only new failures make the exit code 1. */
  known?: KnownFailures
  /** Write a counterexample folder per failure here. */
  out?: string
  /** How the counterexamples' commands name the explore options (the CLI passes its flags). */
  rerunFlags?: readonly string[]
  onProgress?: (progress: Progress) => void
  /** Each run's output as it comes (command mode). */
  onOutput?: (run: string, chunk: Buffer) => void
  signal?: AbortSignal
}

const exploreOptionsSchema = optionsSchema<ExploreOptions>({
  command: z.array(z.string()).min(1, { error: 'expected the command and its arguments' }),
  run: fn(),
  proxy: object('startProxy() options'),
  intercept: object('intercept() options'),
  clock: fn(),
  rules: object('a rules document'),
  config: z.union([z.string(), object<ExploreConfigInput>('an explore config')]),
  faults: z.array(z.string()),
  routes: z.array(z.string()),
  maxOrdinal: z.int().min(1).max(100),
  depth: z.union([z.literal(1), z.literal(2)]),
  jobs: z.int().min(1).max(64),
  seed: z.int(),
  maxRuns: z.int().min(1),
  timeBudget: z.number().positive(),
  runTimeout: z.number().positive(),
  checks: object('{ maxCalls, maxModelCalls, maxTokens, maxRecoveryTokens, claims }'),
  only: z.array(z.string().min(1)),
  env: z.record(z.string(), z.string()),
  known: object('{ baseline, allow }'),
  out: z.string().min(1),
  rerunFlags: z.array(z.string()),
  onProgress: fn(),
  onOutput: fn(),
  signal: object('an AbortSignal'),
} satisfies OptionsShape<ExploreOptions>)

export interface ExploreOutcome {
  readonly result: ExploreResult
}

/** The run id of the baseline. */
export const BASELINE_RUN = 'explore-baseline'

/** Which deltas a model stream carried, read by the plug-ins every run's storm is made with (those `proxy` or `intercept` give, else the default ones). */
function deltaReaders(options: Pick<ExploreOptions, 'proxy' | 'intercept'>): DeltaReader[] {
  const read = protocolHooksOf(stormPlugins(options.proxy ?? options.intercept ?? {})).readDelta
  return read ? [read] : []
}

async function resolveConfig(options: ExploreOptions): Promise<ExploreConfig> {
  let config = options.config === undefined ? DEFAULT_EXPLORE_CONFIG : typeof options.config === 'string' ? await loadExploreConfig(options.config) : parseExploreConfig(options.config, 'the explore config')
  if (options.faults?.length) config = { ...config, faults: faultsNamed(options.faults, config.faults, '--faults') }
  return config
}

/** Explore the command or function; resolves with the matrix (and writes the counterexamples with `out`). */
export async function explore(options: ExploreOptions): Promise<ExploreOutcome> {
  checkOptions('explore()', exploreOptionsSchema, options)
  if ((options.command === undefined) === (options.run === undefined)) throw new ConfigError('Failed to explore: give either `command` (a command and its arguments) or `run` (a function), and only one.')
  const base = parseConfig(options.rules ?? {}, 'the rules (--rules)')
  if (base.rules.length) throw new ConfigError(`Failed to explore: the rules (--rules) hold ${base.rules.length} rule(s); explore makes its own (one fault per run). Keep only routes, redact and mcp in that file.`, { code: 'ERR_USAGE' })
  const config = await resolveConfig(options)
  const seed = options.seed ?? base.seed
  const depth = options.depth ?? 1
  const maxOrdinal = options.maxOrdinal ?? 3
  const jobs = options.jobs ?? 1
  const runTimeout = options.runTimeout ?? 60
  const checks = options.checks ?? {}
  const began = performance.now()
  const shownCommand = options.command ? redactedWords(options.command, base.redact) : null
  const runner: VariationRunner = options.command
    ? await startCommandRunner({ command: options.command, label: shownCommand!.map(shellWord).join(' '), base: { routes: base.routes, redact: base.redact, mcp: base.mcp, seed }, ...(options.proxy ? { proxy: options.proxy } : {}), ...(options.env ? { env: options.env } : {}), ...(options.onOutput ? { onOutput: options.onOutput } : {}) })
    : await startInProcessRunner({ run: options.run!, base: { routes: base.routes, redact: base.redact, mcp: base.mcp, seed }, ...(options.intercept ? { intercept: options.intercept } : {}), ...(options.clock ? { clock: options.clock } : {}) })
  const abort = () => runner.abort()
  options.signal?.addEventListener('abort', abort)
  try {
    const readers = deltaReaders(options)
    const runBase = { seed, routes: base.routes, maxCalls: base.maxCalls }
    const baseline = await runner.run({ run: BASELINE_RUN, rules: { version: 1, seed, routes: base.routes, ...(base.maxCalls ? { maxCalls: base.maxCalls } : {}), rules: [] }, timeoutMs: runTimeout * 1000 })
    checkBaseline(baseline, runner, checks, runTimeout)
    const baselineExchanges = await runner.exchanges(BASELINE_RUN)
    const baselineSites = callSitesOf(baselineExchanges, BASELINE_RUN, readers)
    await runner.forget(BASELINE_RUN)
    const space = new FaultSpace({ config, maxOrdinal, routes: options.routes ?? [] })
    const { variations: singles, skips } = space.singles(baselineSites)
    if (!options.only?.length && singles.length === 0) throw nothingToTry(runner.label, baselineSites, skips)
    const scheduler = new Scheduler({
      space,
      runner,
      base: runBase,
      depth,
      jobs,
      maxRuns: options.maxRuns,
      timeBudgetMs: options.timeBudget === undefined ? undefined : options.timeBudget * 1000,
      runTimeoutMs: runTimeout * 1000,
      checks,
      sitesOfRun: async (run: string): Promise<CallSite[]> => callSitesOf(await runner.exchanges(run), run, readers),
      ...(options.out ? { keepCassette: (variation: Variation, text: string) => writeCounterexampleCassette(options.out!, variation, runBase, text) } : {}),
      onProgress: options.onProgress,
      signal: options.signal,
    })
    if (options.only?.length) await scheduler.only(options.only, singles)
    else await scheduler.explore(singles)
    const sites: ExploreSite[] = [...baselineSites.map((site) => siteResult(site, 'baseline')), ...discoveredSites(scheduler)]
    const variations = scheduler.executed.map((executed) => variationResult(executed))
    const allSkips: ExploreResult['skipped'] = [...skips, ...scheduler.skips].map(({ ids, names, ...skip }) => ({ ...skip, ...(ids ? { ids: [...ids] } : {}), ...(names ? { names: [...names] } : {}) }))
    const failed = variations.filter((variation) => variation.status === 'fail').length
    const passed = variations.filter((variation) => variation.status === 'pass').length
    let result: ExploreResult = {
      version: 1,
      kind: EXPLORE_KIND,
      toolstorm: VERSION,
      command: shownCommand ? shownCommand.map(shellWord).join(' ') : 'in-process',
      seed,
      depth,
      maxOrdinal,
      faults: config.faults.map((fault) => ({ name: fault.name, rule: { ...fault.rule } as ExploreResult['faults'][number]['rule'] })),
      baseline: { run: BASELINE_RUN, calls: baseline.report.calls.length, effects: baseline.report.effects.length, seconds: round(baseline.seconds) },
      sites,
      variations,
      skipped: allSkips,
      summary: {
        variations: variations.length,
        passed,
        failed,
        notExercised: variations.filter((variation) => variation.status === 'not-exercised').length,
        skipped: allSkips.reduce((sum, skip) => sum + skip.variations, 0),
        newFailures: failed,
      },
      exitCode: exitCodeOf({ passed, failed, newFailures: failed }, allSkips),
      timing: { seconds: round((performance.now() - began) / 1000), runs: scheduler.executed.length + 1, jobs },
    }
    if (options.known) result = applyKnown(result, options.known)
    if (options.out) {
      const cassettes = new Set(scheduler.executed.filter((executed) => executed.cassette).map((executed) => executed.variation.id))
      result = await writeCounterexamples(result, { dir: options.out, cassettes, command: shownCommand, rerunFlags: options.rerunFlags ?? [], rules: (id) => scheduler.executed.find((executed) => executed.variation.id === id)?.variation ?? null, base: runBase })
    }
    return { result }
  } finally {
    options.signal?.removeEventListener('abort', abort)
    await runner.close()
  }
}

/** The baseline must pass: exit 0, no contract broken, and traffic through the proxy. */
function checkBaseline(baseline: RunOutcome, runner: VariationRunner, checks: ExploreChecks, runTimeout: number): void {
  const ended = exitCheck(baseline.exit, runTimeout)
  const tail = baseline.output ? `\n--- the last lines it printed ---\n${baseline.output}` : '\n(it printed nothing)'
  if (ended) throw new ToolstormError('ERR_EXPLORE_BASELINE', `Failed to explore ${runner.label}: with no fault injected, ${ended.check.toLowerCase()}: ${ended.detail}. Explore needs a run that passes without faults (Filibuster's first step): fix the agent or its assertion first.${tail}`)
  if (baseline.report.calls.length === 0) {
    throw new ToolstormError('ERR_EXPLORE_NO_TRAFFIC', `Failed to explore ${runner.label}: it exited 0, but sent nothing through the proxy, so there is nothing to break. Point its clients at the proxy with:\n${runner.howToConnect.map((line) => `  - ${line}`).join('\n')}${tail}`)
  }
  const contract = contractOf(baseline.report, checks)
  const failing = contract.checks.filter((check) => !check.passed)
  if (failing.length) throw new ToolstormError('ERR_EXPLORE_BASELINE', `Failed to explore ${runner.label}: with no fault injected, the run broke its contract: ${failing.map((check) => `${check.name}: ${check.detail}`).join('; ')}. Fix that (or the limits given) first.${tail}`)
}

/** No variation in the space: a PASS would say the agent survived what was never tried, so say what left it empty. */
function nothingToTry(label: string, sites: readonly CallSite[], skips: readonly Skip[]): ToolstormError {
  const called = [...callsPerRoute(sites).keys()].map((route) => `${route} (${describeKind(sites.find((site) => site.route === route)!.kind)})`)
  const why = skips.filter((skip) => skip.reason !== 'cannot-fire' && skip.reason !== 'max-ordinal').map((skip) => `  - ${skip.what}: ${skip.detail}`)
  return new ToolstormError('ERR_EXPLORE_NOTHING_TO_TRY', `Failed to explore ${label}: there is no fault to try. The baseline called ${called.join(', ')}, and:\n${why.join('\n')}\nWiden --route, --faults or the config (${docsUrl('explore.md#the-fault-space')}).`)
}

function discoveredSites(scheduler: Scheduler): ExploreSite[] {
  const out: ExploreSite[] = []
  for (const [route, id] of scheduler.foundUnder) {
    const executed = scheduler.executed.find((candidate) => candidate.variation.id === id)
    for (const site of executed?.sites.filter((candidate) => candidate.route === route) ?? []) out.push(siteResult(site, id))
  }
  return out
}

function siteResult(site: CallSite, found: string): ExploreSite {
  const { kind } = site
  return { route: site.route, ordinal: site.ordinal, kind: { ...kind, model: kind.model ? { ...kind.model, deltas: [...kind.model.deltas] } : null, mcp: kind.mcp ? { ...kind.mcp } : null }, found }
}

function round(seconds: number): number {
  return Math.round(seconds * 1000) / 1000
}

/** A command's words as outputs show them: credential shapes and the rules' secrets redacted. */
function redactedWords(command: readonly string[], redact: { keys: readonly string[]; secrets: readonly string[] }): string[] {
  const redactor = createRedactor({ keys: [...redact.keys], secrets: [...redact.secrets] })
  return command.map((word) => redactor.text(word))
}

function variationResult(executed: Executed): ExploreVariationResult {
  const { variation, outcome, verdict } = executed
  const report = outcome.report
  const failing = verdict.status === 'fail'
  return {
    id: variation.id,
    origin: variation.origin,
    steps: variation.steps.map((step, index) => ({ route: step.site.route, ordinal: step.site.ordinal, fault: step.fault.name, rule: { ...step.fault.rule } as ExploreResult['faults'][number]['rule'], ruleName: stepRuleName(index, step) })),
    run: outcome.run,
    status: verdict.status,
    fired: verdict.fired,
    failed: [...verdict.failed],
    exit: outcome.exit,
    recovery: verdict.recovery,
    calls: report.calls.length,
    effects: report.effects.length,
    seconds: round(outcome.seconds),
    ...(failing
      ? {
          timeline: report.calls.map((call) => ({
            call: call.id,
            route: call.route,
            ordinal: call.ordinal,
            started: call.started,
            elapsed: call.elapsed,
            outcome: call.outcome,
            status: call.status,
            fault: call.injected ? call.kind : null,
            injected: call.injected,
            effects: report.effects.filter((effect) => effect.call === call.id).map((effect) => ({ name: effect.name, key: effect.key, identity: effect.identity })),
          })),
          output: outcome.output,
        }
      : {}),
  }
}
