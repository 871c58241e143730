/**
 * Effects committed more than once, by identity: what `noDuplicateEffects` counts, named so a
 * reader can find them (`check` and `inspect` print them under the count).
 */
import type { Report } from '../schema/report.js'

export interface DuplicateEffect {
  /** The effect's name and key as the report holds them (redacted when they carried a secret). */
  readonly name: string
  readonly key: string
  /** How many times it was committed (2 or more). */
  readonly count: number
  /** The calls that committed it, in order. */
  readonly calls: readonly number[]
}

/** Duplicates listed in text, at most; the rest are counted. */
const LISTED = 10

/** Every effect identity committed twice or more, in first-seen order. */
export function duplicateEffects(report: Pick<Report, 'effects'>): DuplicateEffect[] {
  const byIdentity = new Map<number, { name: string; key: string; calls: number[] }>()
  for (const effect of report.effects) {
    const seen = byIdentity.get(effect.identity)
    if (seen) seen.calls.push(effect.call)
    else byIdentity.set(effect.identity, { name: effect.name, key: effect.key, calls: [effect.call] })
  }
  return [...byIdentity.values()].filter((effect) => effect.calls.length > 1).map((effect) => ({ ...effect, count: effect.calls.length }))
}

/** One line per duplicated effect (`create_shipment key "order-7" committed 2 times (calls 2, 3)`), bounded. */
export function formatDuplicateEffects(duplicates: readonly DuplicateEffect[]): string[] {
  const lines = duplicates.slice(0, LISTED).map((d) => `${d.name} key ${JSON.stringify(d.key)} committed ${d.count} times (calls ${d.calls.join(', ')})`)
  if (duplicates.length > LISTED) lines.push(`… and ${duplicates.length - LISTED} more`)
  return lines
}
