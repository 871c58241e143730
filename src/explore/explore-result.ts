/**
 * What `toolstorm explore --json FILE` writes (and `explore()` returns): versioned, validated by
 * `exploreResultSchema` (`toolstorm schema explore`). The matrix (variations, their verdicts and
 * skips) is a function of the agent, the table and the seed: two explores of the same agent, or
 * `--jobs 4` and `--jobs 1`, give the same one. Times (`seconds`, `timing`) are the only fields
 * that differ between them.
 */
import { z } from 'zod'

export const EXPLORE_KIND = 'toolstorm.explore'

const seconds = z.number().min(0)
const counter = z.int().min(0)

export const callKindSchema = z.strictObject({
  method: z.string(),
  write: z.boolean(),
  json: z.boolean(),
  stream: z.boolean(),
  events: z.int().min(0),
  model: z.strictObject({ api: z.string(), provider: z.string(), streamed: z.boolean(), deltas: z.array(z.enum(['text', 'tool_arguments'])) }).nullable(),
  mcp: z.strictObject({ method: z.string(), tool: z.string().nullable(), id: z.boolean(), session: z.boolean() }).nullable(),
})

export const exploreSiteSchema = z.strictObject({
  route: z.string(),
  ordinal: z.int().min(1),
  kind: callKindSchema,
  /** `baseline`, or the id of the variation under which this route was first reached (a fallback path). */
  found: z.string(),
})

export const exploreStepSchema = z.strictObject({
  route: z.string(),
  ordinal: z.int().min(1),
  /** The fault's name in the table (`stream_cut@text`). */
  fault: z.string(),
  /** The rule fields it injects: its kind and parameters. */
  rule: z.record(z.string(), z.json()),
  /** The rule's name in the run's rules (it seeds the fault's own choices, as `schema_drift`'s fields). */
  ruleName: z.string(),
})

export const failedCheckSchema = z.strictObject({ check: z.string(), detail: z.string() })

export const recoveryCostSchema = z.strictObject({
  calls: counter,
  modelCalls: counter,
  tokens: counter,
  seconds: seconds.nullable(),
  recovered: z.boolean(),
})

/** One call of a run, for a failure's timeline. */
export const timelineCallSchema = z.strictObject({
  call: z.int().min(1),
  route: z.string(),
  ordinal: z.int().min(1),
  started: seconds,
  elapsed: seconds.nullable(),
  outcome: z.string(),
  status: z.int().nullable(),
  fault: z.string().nullable(),
  injected: z.boolean(),
  effects: z.array(z.strictObject({ name: z.string(), key: z.string(), identity: z.int() })),
})

export const exploreVariationSchema = z.strictObject({
  id: z.string(),
  /** `single`: a fault at a call site of the baseline; `fallback`: at a route first reached under another fault (the steps before lead there); `pair`: two faults (`--depth 2`). */
  origin: z.enum(['single', 'fallback', 'pair']),
  steps: z.array(exploreStepSchema).min(1),
  run: z.string(),
  status: z.enum(['pass', 'fail', 'not-exercised']),
  /** Whether every fault fired. */
  fired: z.boolean(),
  failed: z.array(failedCheckSchema),
  exit: z.strictObject({ code: z.int().nullable(), signal: z.string().nullable(), timedOut: z.boolean() }),
  recovery: recoveryCostSchema.nullable(),
  calls: counter,
  effects: counter,
  seconds,
  /** Failures: the calls and effects of the run, in order, and the command's last lines. */
  timeline: z.array(timelineCallSchema).optional(),
  output: z.string().optional(),
  /** Failures, with `--out`: the counterexample's folder. */
  counterexample: z.string().optional(),
  /** With `--baseline` / `--allow`: a failure already known, or accepted. */
  known: z.enum(['baseline', 'allowed']).optional(),
})

export const exploreSkipSchema = z.strictObject({
  reason: z.enum(['cannot-fire', 'no-fault', 'max-ordinal', 'config', 'route-filter', 'equivalent', 'implied', 'max-runs', 'time-budget', 'stopped']),
  what: z.string(),
  detail: z.string(),
  variations: counter,
  ids: z.array(z.string()).optional(),
  names: z.array(z.string()).optional(),
})

export const exploreResultSchema = z.strictObject({
  version: z.literal(1, { error: 'expected explore result version 1' }),
  kind: z.literal(EXPLORE_KIND),
  toolstorm: z.string(),
  /** The command explored (redacted), or `in-process`. */
  command: z.string(),
  seed: z.int(),
  depth: z.int().min(1).max(2),
  maxOrdinal: z.int().min(1),
  faults: z.array(z.strictObject({ name: z.string(), rule: z.record(z.string(), z.json()) })),
  baseline: z.strictObject({ run: z.string(), calls: counter, effects: counter, seconds }),
  sites: z.array(exploreSiteSchema),
  variations: z.array(exploreVariationSchema),
  skipped: z.array(exploreSkipSchema),
  summary: z.strictObject({
    variations: counter,
    passed: counter,
    failed: counter,
    notExercised: counter,
    skipped: counter,
    /** Failures `--baseline` / `--allow` did not know: the ones that decide the exit code. */
    newFailures: counter,
  }),
  /** 0 every exercised variation passed (or every failure is known), 1 a new failure, no variation was exercised (no fault fired: nothing was tested), or the search was stopped. */
  exitCode: z.union([z.literal(0), z.literal(1)]),
  timing: z.strictObject({ seconds, runs: counter, jobs: z.int().min(1) }),
})

export type ExploreResult = z.infer<typeof exploreResultSchema>
export type ExploreVariationResult = z.infer<typeof exploreVariationSchema>
export type ExploreSkip = z.infer<typeof exploreSkipSchema>
export type ExploreSite = z.infer<typeof exploreSiteSchema>

/** Variations a stop left unrun (Ctrl-C, SIGTERM): a search cut short is no pass, whatever ran before. */
export function stoppedVariations(result: Pick<ExploreResult, 'skipped'>): number {
  return result.skipped.reduce((sum, skip) => sum + (skip.reason === 'stopped' ? skip.variations : 0), 0)
}

/** The exit code of a result: 1 on a new failure, when no fault fired at all (a search that tested nothing is no pass), and when it was stopped. */
export function exitCodeOf(summary: Pick<ExploreResult['summary'], 'passed' | 'failed' | 'newFailures'>, skipped: ExploreResult['skipped']): 0 | 1 {
  return summary.newFailures > 0 || summary.passed + summary.failed === 0 || stoppedVariations({ skipped }) > 0 ? 1 : 0
}
