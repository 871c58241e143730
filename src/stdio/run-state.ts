/**
 * A run that outlives its process (`toolstorm mcp --state-dir`): an agent that reconnects after a
 * lost answer or a crash launches a new wrapper, and that launch continues the run the last one
 * saved: ordinals, coverage, calls, effects and claims, so a rule on `write_file` #1 does not fire
 * again on the retry, and the report at the end covers every launch.
 *
 * The state file holds what the runs of the storm's memory ledger hold (engine/run.ts), written
 * atomically when a launch ends (the run lock, run-lock.ts, passes it to the next launch). It is
 * continued only by a launch with the same rules (seed, routes, limits): other rules begin a new run.
 * Nothing in it is a secret the report would not show: call and effect records are redacted as
 * the report's are, and effect identities are kept by a digest of their raw (name, key) pair.
 * Rules changed through the admin API during a launch are not saved: the next launch starts with
 * the rules it was given, and its report shows the calls made under the others as earlier rules.
 */
import { createHash } from 'node:crypto'
import { promises as fs } from 'node:fs'
import { z } from 'zod'
import { ToolstormError } from '../errors.js'
import { callSchemaFor, coverageCountsSchema, effectSchema, refusedEffectsSchema, type CoverageCounts } from '../engine/schema/report.js'
import { CLAIM_SOURCES, CLAIM_STATUSES } from '../engine/schema/claim-schema.js'
import { formatIssues } from '../engine/schema/format-issues.js'
import type { Rule } from '../engine/schema/rule.js'
import type { StoredClaim } from '../engine/run-claims.js'
import type { Storm } from '../engine/storm.js'
import { readInputDocument } from '../io/read-input-file.js'
import { writeFileAtomic } from '../io/write-file-atomic.js'
import { VERSION } from '../version.js'

export const RUN_STATE_KIND = 'toolstorm.mcp-run-state'

/** What a launch reads of the state it continues, or why it begins a new run. */
export interface ContinuedRun {
  /** This launch's number in the run, from 1. */
  readonly launch: number
  /** An earlier launch's run was continued. */
  readonly continued: boolean
  /** Why a state found was not continued (other rules), for a line on stderr. */
  readonly replaced?: string
  /** The cassette the earlier launches recorded into (absolute path), if they did. */
  readonly record: string | null
}

/** A state holds at most 1,000 runs of 10,000 calls: bounded as the report files it stands for are. */
const MAX_STATE_BYTES = 1024 * 1024 * 1024

const counter = z.int().min(0)
const seconds = z.number().min(0)
/** Rules as a report shows them (redacted): kept for the report only, never applied. */
const shownRulesSchema = z.array(z.record(z.string(), z.json())).max(100)

function stateSchemaFor(kinds: readonly [string, ...string[]]) {
  const claim = z.strictObject({
    id: z.int().min(1),
    tool: z.string().min(1).max(200),
    toolCallId: z.string().min(1).max(200).nullable(),
    status: z.enum(CLAIM_STATUSES),
    source: z.enum(CLAIM_SOURCES),
    at: seconds,
    traceId: z.string().nullable(),
    spanId: z.string().nullable(),
    upTo: counter,
    after: counter,
  })
  const run = z.strictObject({
    id: z.string().min(1).max(200),
    /** Seconds the run had lasted when it was saved. */
    elapsed: seconds,
    ordinals: z.array(z.tuple([z.string(), z.int().min(1)])),
    calls: z.array(callSchemaFor(kinds)).max(10_000),
    droppedCalls: counter,
    budgetRejections: counter,
    effects: z.array(effectSchema).max(10_000),
    /** Effect identities by the digest of their raw (name, key) pair. */
    identities: z.array(z.tuple([z.string(), z.int().min(1)])),
    coverage: z.record(z.string(), coverageCountsSchema),
    refusedEffects: refusedEffectsSchema.nullable(),
    earlierRules: z.array(z.strictObject({ from: z.int().min(1), to: z.int().min(1), rules: shownRulesSchema })).max(10_000),
    /** The rules in force when it was saved: their digest, as the report shows them, and the first call they decided. */
    rules: z.strictObject({ digest: z.string(), shown: shownRulesSchema, from: counter }),
    claims: z.array(claim).max(10_000),
    spanParents: z.array(z.tuple([z.string(), z.string()])),
    spans: z.strictObject({ received: counter, claims: counter, ignored: counter }),
  })
  return z.strictObject({
    version: z.literal(1, { error: 'expected version 1' }),
    kind: z.literal(RUN_STATE_KIND),
    toolstorm: z.string(),
    /** Digest of the rules file's config the run began with: another config begins a new run. */
    config: z.string(),
    /** Launches so far. */
    launches: z.int().min(1),
    /** When it was saved (ms since the epoch): a real clock counts the time between launches. */
    savedAt: z.number(),
    clock: z.string(),
    activeRun: z.string().nullable(),
    record: z.string().nullable(),
    runs: z.array(run).max(1000),
  })
}

type RunState = z.infer<ReturnType<typeof stateSchemaFor>>
type SavedRun = RunState['runs'][number]

export interface RunStateOptions {
  readonly file: string
  /** The cassette this launch records into (absolute path), if any. */
  readonly record: string | null
}

/**
 * Continue the run saved in `file` when it was made under `storm`'s rules; else begin a new one.
 * Call before the first exchange. A state file that is not one (damaged, another version) fails
 * with an error naming the file and the field: it is never silently replaced.
 */
export async function continueRun(storm: Storm, options: RunStateOptions & { readonly config: string }): Promise<ContinuedRun> {
  const found = await fs.stat(options.file).then(
    () => true,
    (error: NodeJS.ErrnoException) => (error.code === 'ENOENT' ? false : true),
  )
  if (!found) return { launch: 1, continued: false, record: null }
  const input: unknown = await readInputDocument(options.file, { format: 'json', maxBytes: MAX_STATE_BYTES })
  const parsed = stateSchemaFor(storm.faults.kinds).safeParse(input)
  if (!parsed.success) {
    const lines = formatIssues(parsed.error, input)
    throw new ToolstormError('ERR_CONFIG_INVALID', `Failed to continue the run saved in ${options.file}: ${lines[0]}. Delete the file to begin a new run.`, { details: lines.join('\n') })
  }
  const state = parsed.data
  if (state.config !== options.config) {
    return { launch: 1, continued: false, record: null, replaced: `the run saved in ${options.file} was made under other rules: a new run begins (it replaces that one when this launch ends)` }
  }
  const gap = storm.clock.kind === 'real' ? Math.max(0, Date.now() - state.savedAt) / 1000 : 0
  for (const saved of state.runs) restoreRun(storm, saved, gap)
  if (state.activeRun !== null && storm.decider.activeRun === null) storm.decider.activeRun = state.activeRun
  return { launch: state.launches + 1, continued: true, record: state.record }
}

/** Save `storm`'s runs to `file` (atomically, owner-only), as launch `launch` of the run begun under `config`. */
export async function saveRun(storm: Storm, options: RunStateOptions & { readonly config: string; readonly launch: number }): Promise<void> {
  const now = storm.clock.now()
  const runs: SavedRun[] = []
  for (const run of storm.ledger.all()) {
    const inForce = run.rulesInForce
    // Rules as the report shows them (payloads redacted): the state keeps nothing the report would not.
    const report = storm.report(run.id)
    runs.push({
      id: run.id,
      elapsed: Math.max(0, now - run.start),
      ordinals: [...run.ordinals],
      calls: run.calls,
      droppedCalls: run.droppedCalls,
      budgetRejections: run.budgetRejections,
      effects: run.effects,
      identities: [...run.identities],
      coverage: Object.fromEntries(run.coverage),
      refusedEffects: run.refusedEffects,
      earlierRules: (report.earlierRules ?? []) as SavedRun['earlierRules'],
      rules: { digest: rulesDigest(inForce.rules), shown: report.rules as SavedRun['rules']['shown'], from: inForce.from },
      claims: run.claims.claims,
      spanParents: [...run.claims.spanParents],
      spans: { ...run.claims.spans },
    })
  }
  const state: RunState = {
    version: 1,
    kind: RUN_STATE_KIND,
    toolstorm: VERSION,
    config: options.config,
    launches: options.launch,
    savedAt: Date.now(),
    clock: storm.clock.kind,
    activeRun: storm.decider.activeRun,
    record: options.record,
    runs,
  }
  await writeFileAtomic(options.file, JSON.stringify(state))
}

/** The digest of a storm's config as its rules file gave it: launches with the same one continue a run. */
export function configDigest(storm: Storm): string {
  return createHash('sha256').update(JSON.stringify(storm.config)).digest('base64url')
}

function rulesDigest(rules: readonly Rule[]): string {
  return createHash('sha256').update(JSON.stringify(rules)).digest('base64url')
}

function restoreRun(storm: Storm, saved: SavedRun, gap: number): void {
  const run = storm.run(saved.id)
  // A run this launch already began (it cannot have: the state is read before the first call) is left alone.
  if (run.callCount > 0) return
  run.start = storm.clock.now() - saved.elapsed - gap
  for (const [route, ordinal] of saved.ordinals) run.ordinals.set(route, ordinal)
  run.calls.push(...saved.calls)
  run.droppedCalls = saved.droppedCalls
  run.budgetRejections = saved.budgetRejections
  const routes = new Map(saved.calls.map((call) => [call.id, call.route]))
  // Through the ledger: the routes they were committed on are known to commit (claims' verdicts).
  for (const effect of saved.effects) storm.ledger.addEffect(run, routes.get(effect.call) ?? '', effect)
  for (const [digest, identity] of saved.identities) run.identities.set(digest, identity)
  run.refusedEffects = saved.refusedEffects
  for (const claim of saved.claims) run.claims.claims.push(claim as StoredClaim)
  for (const [span, parent] of saved.spanParents) run.claims.spanParents.set(span, parent)
  Object.assign(run.claims.spans, saved.spans)
  // The rules: those in force when it was saved go on, unless they were changed through the admin
  // API then (this launch has its rules file's): the calls made under them become earlier rules.
  const rules = storm.decider.configOf(run.id).rules
  const earlier = saved.earlierRules.map((set) => ({ ...set, rules: set.rules as unknown as Rule[] }))
  let from = saved.rules.from
  if (saved.rules.digest !== rulesDigest(rules)) {
    if (run.callCount > from) earlier.push({ from: from + 1, to: run.callCount, rules: saved.rules.shown as unknown as Rule[] })
    from = run.callCount
  }
  run.earlierRules.push(...earlier)
  run.resume(rules, from)
  // Coverage of every rule set the run's calls began under, as syncRules keeps it.
  run.coverage.clear()
  const zero = (): CoverageCounts => ({ eligible: 0, selected: 0, triggered: 0 })
  for (const rule of [...earlier.flatMap((set) => set.rules), ...rules]) run.coverage.set(rule.name, saved.coverage[rule.name] ?? zero())
}
