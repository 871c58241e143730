/**
 * The terminal matrix: per call site (route and ordinal), each fault tried there with its verdict
 * (PASS, FAIL and the check that failed, not exercised) and the recovery cost; then what was not
 * run and why, and the totals. A fault on a fallback path shows under its route, with the fault
 * that led there; a pair under its second fault's call site.
 */
import { stoppedVariations, type ExploreResult, type ExploreVariationResult } from './explore-result.js'
import type { Progress } from './scheduler.js'
import { describeVariation } from './variation.js'
import { describeKind } from './call-sites.js'
import { docsUrl } from '../docs-url.js'

const STATUS: Record<ExploreVariationResult['status'], string> = { pass: 'PASS', fail: 'FAIL', 'not-exercised': 'not exercised' }

const SKIP_WORDS: Record<ExploreResult['skipped'][number]['reason'], string> = {
  'cannot-fire': 'cannot fire',
  'no-fault': 'no fault',
  'max-ordinal': 'max ordinal',
  config: 'config',
  'route-filter': '--route',
  equivalent: 'equivalent',
  implied: 'implied',
  'max-runs': '--max-runs',
  'time-budget': '--time-budget',
  stopped: 'stopped',
}

/** `recovery +2 calls · 1 model · 350 tok · 0.41 s`, or, when a faulted route never answered a success again, `no later success (+2 calls …)`. */
export function formatRecovery(recovery: ExploreVariationResult['recovery']): string {
  if (!recovery) return ''
  const cost = `+${recovery.calls} call${recovery.calls === 1 ? '' : 's'} · ${recovery.modelCalls} model · ${recovery.tokens} tok`
  return recovery.recovered && recovery.seconds !== null ? `recovery ${cost} · ${recovery.seconds.toFixed(2)} s` : `no later success on the route (${cost})`
}

function siteOf(variation: ExploreVariationResult): string {
  const target = variation.steps[variation.steps.length - 1]!
  return `${target.route} #${target.ordinal}`
}

function faultLabel(variation: ExploreVariationResult): string {
  const target = variation.steps[variation.steps.length - 1]!
  const before = variation.steps.slice(0, -1)
  return before.length ? `${target.fault} (after ${before.map((step) => `${step.fault} on ${step.route} #${step.ordinal}`).join(', ')})` : target.fault
}

/** One verdict: `FAIL  No duplicate side effects: …` (known failures say so). */
function verdictText(variation: ExploreVariationResult): string {
  const known = variation.known === 'baseline' ? ' (known: in --baseline)' : variation.known === 'allowed' ? ' (allowed)' : ''
  if (variation.status !== 'fail') return STATUS[variation.status]
  return `FAIL${known}  ${variation.failed.map((failure) => `${failure.check}: ${failure.detail}`).join(' · ')}`
}

/** A note when the baseline wrote but reported no commit: a duplicate cannot be seen, so a lost answer on a write fails unjudged. */
function unreportedWrites(result: ExploreResult): string {
  if (result.baseline.effects > 0 || !result.sites.some((site) => site.found === 'baseline' && site.kind.write)) return ''
  return ` (it wrote, and no commit was reported: a write whose answer is lost fails, unjudged; ${docsUrl('explore.md#the-tool-sides-commits')})`
}

/** The last line: PASS, FAIL, or STOPPED (a search cut short, whatever ran before it). */
function verdictLine(result: ExploreResult): string {
  const { summary } = result
  const stopped = stoppedVariations(result)
  if (stopped > 0) return `STOPPED: ${stopped} variation(s) not run${summary.newFailures ? `, ${summary.newFailures} new failure(s) before the stop` : ''}: no verdict on the search`
  if (result.exitCode === 0) return summary.failed ? 'PASS: every failure is known' : 'PASS: every exercised variation passed'
  return summary.newFailures ? `FAIL: ${summary.newFailures} new failure(s)` : `FAIL: no fault fired in ${summary.notExercised} variation(s): nothing was tested`
}

/** The matrix, the skips and the totals, as lines. */
export function formatExplore(result: ExploreResult): string[] {
  const lines = [`toolstorm explore · ${result.command} · seed ${result.seed}${result.depth > 1 ? ' · depth 2' : ''}`, `baseline: ${result.baseline.calls} call(s), ${result.baseline.effects} effect(s), ${result.baseline.seconds.toFixed(2)} s: PASS${unreportedWrites(result)}`, '']
  const bySite = new Map<string, ExploreVariationResult[]>()
  for (const variation of result.variations) bySite.set(siteOf(variation), [...(bySite.get(siteOf(variation)) ?? []), variation])
  const width = Math.min(48, Math.max(8, ...result.variations.map((variation) => faultLabel(variation).length)))
  for (const [site, variations] of bySite) {
    const known = result.sites.find((candidate) => `${candidate.route} #${candidate.ordinal}` === site)
    const found = known && known.found !== 'baseline' ? ` · reached under ${known.found}` : ''
    lines.push(`${site}${known ? `  (${describeKind(known.kind)}${found})` : ''}`)
    for (const variation of variations) {
      const cost = formatRecovery(variation.recovery)
      lines.push(`  ${faultLabel(variation).padEnd(width)}  ${verdictText(variation)}${cost ? `  · ${cost}` : ''}${variation.status === 'fail' ? `  [${variation.id}]` : ''}`)
    }
  }
  if (result.variations.length === 0) lines.push('(no variation ran)')
  if (result.skipped.length) {
    lines.push('', 'not run:')
    for (const skip of result.skipped) lines.push(`  ${SKIP_WORDS[skip.reason].padEnd(14)} ${skip.what}: ${skip.detail}${skip.variations > 1 ? ` (${skip.variations} variations)` : ''}`)
  }
  const failures = result.variations.filter((variation) => variation.status === 'fail')
  if (failures.length) {
    lines.push('', 'failures (rerun one with toolstorm explore --only <id> -- <command>):')
    for (const variation of failures) lines.push(`  ${variation.id}  ${describeOf(variation)}${variation.counterexample ? `  → ${variation.counterexample}` : ''}`)
  }
  const { summary } = result
  const known = summary.failed - summary.newFailures
  lines.push('', `${summary.variations} variation(s): ${summary.passed} pass, ${summary.failed} FAIL${known ? ` (${known} known)` : ''}, ${summary.notExercised} not exercised · ${summary.skipped} skipped · ${result.timing.seconds.toFixed(1)} s, ${result.timing.runs} runs, --jobs ${result.timing.jobs}`)
  lines.push(verdictLine(result))
  return lines
}

export function describeOf(variation: ExploreVariationResult): string {
  return describeVariation({ steps: variation.steps.map((step) => ({ site: step, fault: { name: step.fault } })) })
}


/** One plain line per finished variation (not a TTY). */
export function formatProgressLine(progress: Progress): string {
  const { variation, verdict } = progress.last
  const status = verdict.status === 'fail' ? `FAIL ${verdict.failed.map((failure) => failure.check).join(', ')}` : STATUS[verdict.status]
  return `[${progress.done}/${progress.total}] ${status}  ${describeVariation(variation)}  (${variation.id})`
}

/** The live line on a TTY: done/total, failures so far, time left. */
export function formatProgressStatus(progress: Progress): string {
  const left = progress.secondsLeft === null ? '' : ` · ~${Math.ceil(progress.secondsLeft)} s left`
  return `explore ${progress.done}/${progress.total} · ${progress.failures} failing${left}`
}
