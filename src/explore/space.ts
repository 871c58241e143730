/**
 * The fault space: each call site × each fault that applies to its kind of call, within
 * `--max-ordinal` and the routes the config and `--route` leave in. What cannot be in it is said
 * with a reason (an ordinal the baseline never reached cannot fire; a route skipped by the
 * config), never dropped silently. Variations are ordered most informative first: writes before
 * reads, first ordinals first, then the order the routes were first reached and the table's order.
 */
import { closestName } from '../engine/closest-name.js'
import { globMatches } from '../engine/glob.js'
import { callsPerRoute, describeKind, siteName, type CallKind, type CallSite } from './call-sites.js'
import { faultsForRoute, type ExploreConfig } from './explore-config.js'
import { faultsFor, type FaultChoice } from './fault-catalogue.js'
import { makeVariation, type FaultStep, type Variation, type VariationOrigin } from './variation.js'

/** Why variations were not run. */
export type SkipReason = 'cannot-fire' | 'no-fault' | 'max-ordinal' | 'config' | 'route-filter' | 'equivalent' | 'implied' | 'max-runs' | 'time-budget' | 'stopped'

export interface Skip {
  readonly reason: SkipReason
  /** What was skipped: a route, a call site, a variation. */
  readonly what: string
  readonly detail: string
  /** How many variations this stands for. */
  readonly variations: number
  /** Their ids, when they were variations of the space (budgets, equivalence). */
  readonly ids?: readonly string[]
  /** What each of `ids` is (`response_lost on POST /shipments #1`). */
  readonly names?: readonly string[]
}

export interface SpaceOptions {
  readonly config: ExploreConfig
  readonly maxOrdinal: number
  /** `--route` globs: only routes matching one are explored (none: every route). */
  readonly routes: readonly string[]
}

export class FaultSpace {
  readonly #options: SpaceOptions
  /** Each known route's kind of call and the order it was first reached in. */
  readonly #routes = new Map<string, { kind: CallKind; order: number }>()

  constructor(options: SpaceOptions) {
    this.#options = options
  }

  /** Whether `route` was reached before (in the baseline or a run already looked at). */
  knows(route: string): boolean {
    return this.#routes.has(route)
  }

  /** Learn the routes of `sites` (their first site's kind stands for the route). */
  learn(sites: readonly CallSite[]): void {
    for (const site of sites) if (!this.#routes.has(site.route)) this.#routes.set(site.route, { kind: site.kind, order: this.#routes.size })
  }

  /** The kind of a known route's calls. */
  kindOf(route: string): CallKind | undefined {
    return this.#routes.get(route)?.kind
  }

  /** Why `route` is left out (config `skip`, `--route`), or null. */
  #routeExcluded(route: string): { reason: SkipReason; detail: string } | null {
    if (this.#options.routes.length && !this.#options.routes.some((glob) => globMatches(glob, route))) return { reason: 'route-filter', detail: `not matched by --route ${this.#options.routes.map((glob) => JSON.stringify(glob)).join(', ')}` }
    if (faultsForRoute(this.#options.config, route) === null) return { reason: 'config', detail: 'skipped by the config (skip: true)' }
    return null
  }

  /** The faults to try at `site`. */
  faultsAt(site: Pick<CallSite, 'route' | 'kind'>): FaultChoice[] {
    const table = faultsForRoute(this.#options.config, site.route)
    return table ? faultsFor(site.kind, table) : []
  }

  /** The single-fault variations of the baseline's `sites`, with what was left out and why. */
  singles(sites: readonly CallSite[]): { variations: Variation[]; skips: Skip[] } {
    this.learn(sites)
    const skips: Skip[] = []
    const variations: Variation[] = []
    const counts = callsPerRoute(sites)
    for (const [route, calls] of counts) {
      const kind = this.kindOf(route)!
      const excluded = this.#routeExcluded(route)
      const faults = this.faultsAt({ route, kind })
      if (excluded) {
        skips.push({ reason: excluded.reason, what: route, detail: excluded.detail, variations: faults.length * Math.min(calls, this.#options.maxOrdinal) })
        continue
      }
      if (!faults.length) skips.push({ reason: 'no-fault', what: route, detail: `no fault of the table applies to this call (${describeKind(kind)})`, variations: 0 })
      if (calls < this.#options.maxOrdinal && faults.length) {
        const first = calls + 1
        skips.push({ reason: 'cannot-fire', what: `${route} #${first}${first < this.#options.maxOrdinal ? `–#${this.#options.maxOrdinal}` : ''}`, detail: `cannot fire: the baseline called this route ${calls} time(s)`, variations: faults.length * (this.#options.maxOrdinal - calls) })
      }
      if (calls > this.#options.maxOrdinal && faults.length) {
        skips.push({ reason: 'max-ordinal', what: `${route} #${this.#options.maxOrdinal + 1}–#${calls}`, detail: `beyond --max-ordinal ${this.#options.maxOrdinal}`, variations: faults.length * (calls - this.#options.maxOrdinal) })
      }
    }
    for (const site of sites) {
      if (site.ordinal > this.#options.maxOrdinal || this.#routeExcluded(site.route)) continue
      for (const fault of this.faultsAt(site)) variations.push(makeVariation([{ site, fault }], 'single'))
    }
    return { variations: this.sort(variations), skips: [...skips, ...this.#unmatched([...counts.keys()])] }
  }

  /** `--route` and config globs no route of the baseline matches: a misspelled route must not silently narrow (or widen) the search. */
  #unmatched(routes: readonly string[]): Skip[] {
    const said = (glob: string): string => {
      const near = closestName(glob, routes)
      return `matches no route the baseline called${near ? ` (did you mean ${JSON.stringify(near)}?)` : ''}`
    }
    const unmatched = (glob: string) => !routes.some((route) => globMatches(glob, route))
    return [
      ...this.#options.routes.filter(unmatched).map((glob): Skip => ({ reason: 'route-filter', what: `--route ${JSON.stringify(glob)}`, detail: said(glob), variations: 0 })),
      ...this.#options.config.routes.filter((entry) => unmatched(entry.glob)).map((entry): Skip => ({ reason: 'config', what: `routes[${JSON.stringify(entry.glob)}]`, detail: said(entry.glob), variations: 0 })),
    ]
  }

  /**
   * `prefix` plus one fault at each of `sites` (the sites of the prefix's run): the variations of
   * a fallback path (a route first reached under the prefix) or of a pair. Sites the prefix already
   * faults, beyond `--max-ordinal` or on routes left out are not extended.
   */
  extend(prefix: Variation, sites: readonly CallSite[], origin: VariationOrigin): Variation[] {
    const taken = new Set(prefix.steps.map((step) => siteName(step.site)))
    const variations: Variation[] = []
    for (const site of sites) {
      if (taken.has(siteName(site)) || site.ordinal > this.#options.maxOrdinal || this.#routeExcluded(site.route)) continue
      for (const fault of this.faultsAt(site)) variations.push(makeVariation([...prefix.steps, { site, fault } satisfies FaultStep], origin))
    }
    return variations
  }

  /** Most informative first: by each step in turn, writes before reads, first ordinals first, then route order and table order. */
  sort(variations: readonly Variation[]): Variation[] {
    const keyOf = (step: FaultStep): number[] => {
      const table = faultsForRoute(this.#options.config, step.site.route) ?? []
      return [step.site.kind.write ? 0 : 1, step.site.ordinal, this.#routes.get(step.site.route)?.order ?? Number.MAX_SAFE_INTEGER, table.findIndex((fault) => fault.name === step.fault.name)]
    }
    const compare = (a: Variation, b: Variation): number => {
      const length = Math.max(a.steps.length, b.steps.length)
      for (let i = 0; i < length; i++) {
        const left = a.steps[i]
        const right = b.steps[i]
        if (!left || !right) return left ? 1 : -1
        const x = keyOf(left)
        const y = keyOf(right)
        for (let j = 0; j < x.length; j++) if (x[j] !== y[j]) return x[j]! - y[j]!
        if (left.site.route !== right.site.route) return left.site.route < right.site.route ? -1 : 1
      }
      return 0
    }
    return [...variations].sort(compare)
  }
}
