/**
 * One run's state: ordinals, keys, calls, effects and coverage. Parallel test workers sharing a
 * proxy each get their own run (`x-toolstorm-run`), so they never shift each other's schedules.
 */
import type { CallRecord, CoverageCounts, EffectRecord } from './schema/report.js'
import type { Rule } from './schema/rule.js'

export class Run {
  readonly id: string
  /** Clock reading when the run started; call timings are relative to it. */
  start: number
  readonly ordinals = new Map<string, number>()
  readonly keys = new Map<string, Set<string>>()
  readonly calls: CallRecord[] = []
  readonly effects: EffectRecord[] = []
  readonly identities = new Map<string, number>()
  readonly coverage = new Map<string, CoverageCounts>()
  budgetRejections = 0
  /** Exchange ids of this run, so a reset forgets them. */
  readonly exchangeIds: string[] = []

  constructor(id: string, start: number, rules: readonly Rule[]) {
    this.id = id
    this.start = start
    this.syncRules(rules)
  }

  /** Give every rule a counter; keep counts of rules whose name survives a rule change. */
  syncRules(rules: readonly Rule[]): void {
    const previous = new Map(this.coverage)
    this.coverage.clear()
    for (const rule of rules) this.coverage.set(rule.name, previous.get(rule.name) ?? { eligible: 0, selected: 0, triggered: 0 })
  }

  /** Reserve the next ordinal and a unique key for `route`. */
  reserve(route: string, requestedKey: string | undefined): { ordinal: number; key: string } {
    const ordinal = (this.ordinals.get(route) ?? 0) + 1
    let used = this.keys.get(route)
    if (!used) {
      used = new Set()
      this.keys.set(route, used)
    }
    let key = requestedKey ?? `#${ordinal}`
    // A retry that reuses its key gets a distinct one, so its draw is its own (ToolStorm refuses
    // the call instead; over HTTP that would turn a harness rule into a fault the agent sees).
    if (used.has(key)) {
      let n = 2
      while (used.has(`${key}#${n}`)) n++
      key = `${key}#${n}`
    }
    used.add(key)
    this.ordinals.set(route, ordinal)
    return { ordinal, key }
  }

  /** The per-run identity of a raw (name, key) pair, assigned in first-seen order. */
  identityOf(name: string, key: string): number {
    const id = JSON.stringify([name, key])
    let identity = this.identities.get(id)
    if (identity === undefined) {
      identity = this.identities.size + 1
      this.identities.set(id, identity)
    }
    return identity
  }
}
