/**
 * One variation: the faults of one run, each at one call site. A single fault is one step; a
 * fault on a fallback path is the fault that led there and the fault on it; `--depth 2` pairs
 * are two steps. The id is a chain of step hashes (`3f2a91c0`, `3f2a91c0-9e1b77d2`): stable for
 * the same agent, table and seed, so `--only <id>`, `--baseline` and `--allow` name it, and
 * `--only` can find a step by running the steps before it (each step's site was reached under
 * them).
 */
import { createHash } from 'node:crypto'
import { canonicalJson } from '../json/canonical-json.js'
import type { RuleInput } from '../engine/schema/rule.js'
import type { CallSite } from './call-sites.js'
import { siteName } from './call-sites.js'
import type { FaultChoice } from './fault-catalogue.js'

export interface FaultStep {
  readonly site: CallSite
  readonly fault: FaultChoice
}

/** Where a variation came from: the baseline's call sites, a route first seen under a fault, or a pair. */
export type VariationOrigin = 'single' | 'fallback' | 'pair'

export interface Variation {
  readonly id: string
  readonly steps: readonly FaultStep[]
  readonly origin: VariationOrigin
}

/** The hash of one step: its route, ordinal, fault name and rule fields. */
export function stepHash(step: FaultStep): string {
  return createHash('sha256')
    .update(canonicalJson([step.site.route, step.site.ordinal, step.fault.name, step.fault.rule]))
    .digest('hex')
    .slice(0, 8)
}

export function makeVariation(steps: readonly FaultStep[], origin: VariationOrigin): Variation {
  return { id: steps.map(stepHash).join('-'), steps, origin }
}

/** The step the variation is about (its last), the others lead to it. */
export function targetOf(variation: Variation): FaultStep {
  return variation.steps[variation.steps.length - 1]!
}

/** A variation's identity as a set of steps (pairs found from either side are one). */
export function stepSetKey(variation: Variation): string {
  return variation.steps.map(stepHash).sort().join('+')
}

/** `response_lost on POST /shipments #1` (with what led there, `… after timeout on GET /inventory #1`). */
export function describeVariation(variation: { readonly steps: ReadonlyArray<{ readonly site: Pick<CallSite, 'route' | 'ordinal'>; readonly fault: Pick<FaultChoice, 'name'> }> }): string {
  const [first, ...rest] = [...variation.steps].reverse()
  const text = `${first!.fault.name} on ${siteName(first!.site)}`
  return rest.length ? `${text} after ${rest.map((step) => `${step.fault.name} on ${siteName(step.site)}`).join(', ')}` : text
}

/** A route name as a rule glob matching only itself (`*`, `?` and `[` made literal). */
export function exactRouteGlob(route: string): string {
  const escaped = route.replace(/[*?[]/g, (ch) => `[${ch}]`)
  // A rule's route is at most 200 characters: a longer name keeps its head and matches the rest.
  return escaped.length <= 200 ? escaped : `${escaped.slice(0, 199).replace(/\[[^\]]*$/, '')}*`
}

/** The rule names explore gives: `explore 1: response_lost POST /shipments #1` (at most 100 characters). */
export function stepRuleName(index: number, step: FaultStep): string {
  return `explore ${index + 1}: ${step.fault.name} ${siteName(step.site)}`.slice(0, 100)
}

/** What every run's rules share: the seed, the named routes and the call budget of the proxy's rules. */
export interface RunBase {
  readonly seed: number
  readonly routes: Readonly<Record<string, string>>
  readonly maxCalls?: number | null
}

/** The run's rules file: the base routes, the seed, one rule per step at its call site. */
export function rulesFor(variation: Variation, base: RunBase): { version: 1; seed: number; routes: Record<string, string>; maxCalls?: number; rules: RuleInput[] } {
  return {
    version: 1,
    seed: base.seed,
    routes: { ...base.routes },
    ...(base.maxCalls ? { maxCalls: base.maxCalls } : {}),
    rules: variation.steps.map((step, index) => ({ name: stepRuleName(index, step), route: exactRouteGlob(step.site.route), calls: [step.site.ordinal], ...step.fault.rule }) as RuleInput),
  }
}
