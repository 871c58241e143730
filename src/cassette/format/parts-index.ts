/**
 * The index of a rotated recording (`FILE.index.jsonl`, written by record/cassette-parts.ts, read
 * by `extract`): which parts there are and where each run is. Append-only JSON Lines:
 * `{"part","opened"}` when a part starts, `{"part","closed","exchanges","bytes","runs"}` when it is
 * closed, `{"part","deleted","reason"}` when `--rotate-keep` removed it.
 */

/** A run's exchanges in one part. */
export interface PartRun {
  run: string
  exchanges: number
  first: number
  last: number
  /** The part the run's later exchanges went to (it was still active when this part closed). */
  continues?: string
  /** The part the run's earlier exchanges are in. */
  from?: string
}

/** One index line. */
export type IndexLine = { part: string; opened: string } | { part: string; closed: string; exchanges: number; bytes: number; runs: PartRun[] } | { part: string; deleted: string; reason: string }

/** The index file of rotated parts for a recording into `file`. */
export function indexFileFor(file: string): string {
  return file.replace(/\.jsonl$/i, '') + '.index.jsonl'
}

/** The name of part `n` of a recording into `file`. */
export function partFileFor(file: string, n: number): string {
  return `${file.replace(/\.jsonl$/i, '')}-${String(n).padStart(4, '0')}.jsonl`
}

