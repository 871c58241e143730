/**
 * One run's state: ordinals, keys, calls, effects and coverage. Parallel test workers sharing a
 * proxy each get their own run (`x-toolstorm-run`), so they never shift each other's schedules.
 */
import { createHash } from 'node:crypto'
import type { CallRecord, CoverageCounts, EarlierRules, EffectRecord, RefusedEffects } from './schema/report.js'
import type { Rule } from './schema/rule.js'
import { RunClaims } from './run-claims.js'

/**
 * Rule sets kept for the report, at most: one per rule change that calls began under, so each
 * holds at least one call, and past the report's 10,000 itemized calls coverage is only bounded.
 */
export const MAX_EARLIER_RULE_SETS = 10_000

/** What a run id may be: it travels in headers, URL paths and proxy credentials. */
export const RUN_ID = /^[A-Za-z0-9._~-]{1,128}$/
/** The one run no request can name (not a run id): its report shows the rules in force, with no calls. */
export const NO_RUN = '\u0000'
/** Where requests and claims that name no run go, when no run is active. */
export const DEFAULT_RUN = 'default'

export class Run {
  readonly id: string
  /** Clock reading when the run started; call timings are relative to it. */
  start: number
  readonly ordinals = new Map<string, number>()
  readonly calls: CallRecord[] = []
  readonly effects: EffectRecord[] = []
  /** What the agent reported about its tool calls (docs/claims.md), judged when a report is made. */
  readonly claims = new RunClaims()
  /** Effect identities by a digest of their raw (name, key) pair: a saved run never holds the raw values. */
  readonly identities = new Map<string, number>()
  readonly coverage = new Map<string, CoverageCounts>()
  budgetRejections = 0
  /** Effect reports refused while this run was kept: contracts on effects cannot pass then. */
  refusedEffects: RefusedEffects | null = null
  /** Calls made after the itemized limit. */
  droppedCalls = 0
  /** Keys sent explicitly per route (default `#n` keys are unique by construction). */
  readonly explicitKeys = new Map<string, Set<string>>()
  /**
   * The rule sets calls of this run began under before the rules in force now (`PUT /rules`),
   * oldest first: the report keeps them, so every call's rule, and every rule's coverage, can be
   * checked against the rules that decided it.
   */
  readonly earlierRules: EarlierRules = []
  /** The rules in force for this run, and how many of its calls had started when they came into force. */
  #rules: readonly Rule[] = []
  #rulesFrom = 0

  constructor(id: string, start: number, rules: readonly Rule[]) {
    this.id = id
    this.start = start
    this.syncRules(rules)
  }

  /**
   * New rules: a counter for every rule; counts of a rule whose name survives are kept, as are
   * those of the rules that decided earlier calls (their set goes to `earlierRules`).
   */
  syncRules(rules: readonly Rule[]): void {
    const begun = this.callCount
    if (begun > this.#rulesFrom) {
      // Calls began under the rules in force: they stay in the report with their range of calls.
      if (sameRules(rules, this.#rules)) return
      if (this.earlierRules.length < MAX_EARLIER_RULE_SETS) this.earlierRules.push({ from: this.#rulesFrom + 1, to: begun, rules: this.#rules })
      this.#rulesFrom = begun
    }
    this.#rules = rules
    const previous = new Map(this.coverage)
    this.coverage.clear()
    for (const set of this.earlierRules) for (const rule of set.rules) this.coverage.set(rule.name, previous.get(rule.name) ?? { eligible: 0, selected: 0, triggered: 0 })
    for (const rule of rules) this.coverage.set(rule.name, previous.get(rule.name) ?? { eligible: 0, selected: 0, triggered: 0 })
  }

  /** Calls started in this run, itemized or not. */
  get callCount(): number {
    return this.calls.length + this.droppedCalls
  }

  /** Reserve the next ordinal and a unique key for `route`. */
  reserve(route: string, requestedKey: string | undefined): { ordinal: number; key: string } {
    const ordinal = (this.ordinals.get(route) ?? 0) + 1
    this.ordinals.set(route, ordinal)
    let explicit = this.explicitKeys.get(route)
    const taken = (key: string) => explicit?.has(key) === true || isDefaultKeyUpTo(key, ordinal - (requestedKey === undefined ? 1 : 0))
    let key = requestedKey ?? `#${ordinal}`
    if (requestedKey === undefined && !taken(key)) return { ordinal, key }
    // A retry that reuses its key gets a distinct one, so its draw is its own (ToolStorm refuses
    // the call instead; over HTTP that would turn a harness rule into a fault the agent sees).
    if (taken(key)) {
      let n = 2
      while (taken(`${key}#${n}`)) n++
      key = `${key}#${n}`
    }
    if (!explicit) {
      explicit = new Set()
      this.explicitKeys.set(route, explicit)
    }
    explicit.add(key)
    return { ordinal, key }
  }

  /** Count an effect report the admin API refused (its reason kept for the first). */
  refuseEffect(reason: string): void {
    if (this.refusedEffects) this.refusedEffects.count++
    else this.refusedEffects = { count: 1, first: reason.slice(0, 300) }
  }

  /** The rules in force, and how many calls had begun before they came into force (`earlierRules` holds those calls' rules). */
  get rulesInForce(): { readonly rules: readonly Rule[]; readonly from: number } {
    return { rules: this.#rules, from: this.#rulesFrom }
  }

  /** Continue a saved run (src/stdio/run-state.ts): `rules` are in force for the calls after the first `from`. */
  resume(rules: readonly Rule[], from: number): void {
    this.#rules = rules
    this.#rulesFrom = from
  }

  /** The per-run identity of a raw (name, key) pair, assigned in first-seen order. */
  identityOf(name: string, key: string): number {
    const id = identityDigest(name, key)
    let identity = this.identities.get(id)
    if (identity === undefined) {
      identity = this.identities.size + 1
      this.identities.set(id, identity)
    }
    return identity
  }
}

/** The digest a raw (name, key) pair is known by (the shared store keys identities by the same). */
export function identityDigest(name: string, key: string): string {
  return createHash('sha256').update(JSON.stringify([name, key])).digest('base64url')
}

/** Whether `key` is a default key `#n` already handed out (n ≤ `upTo`). */
function isDefaultKeyUpTo(key: string, upTo: number): boolean {
  if (!/^#[1-9]\d*$/.test(key)) return false
  return Number(key.slice(1)) <= upTo
}

/** Whether two rule sets are the same rules (a `PUT /rules` that changed nothing). */
function sameRules(a: readonly Rule[], b: readonly Rule[]): boolean {
  return a.length === b.length && JSON.stringify(a) === JSON.stringify(b)
}
