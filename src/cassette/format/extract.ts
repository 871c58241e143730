/**
 * Cut runs out of a stopped recording (`toolstorm extract`): a cassette, or the index of a rotated
 * one (`STEM.index.jsonl`, whose parts are read where the run is). The runs' exchanges (optionally
 * only some routes, only from some seconds into the run) become a small cassette of their own,
 * renumbered so it is valid (cut-exchanges.ts), with those runs' claims, its bodies inline in
 * memory and in body files once saved.
 */
import path from 'node:path'
import { ToolstormError } from '../../errors.js'
import { globMatches } from '../../engine/glob.js'
import { readJsonLines } from '../../io/read-json-lines.js'
import type { IndexLine } from '../record/cassette-parts.js'
import type { CassetteExchange } from './cassette-schema.js'
import { Cassette } from './cassette.js'
import { cutExchanges } from './cut-exchanges.js'

export interface ExtractOptions {
  /** The runs to keep (at least one). */
  readonly runs: readonly string[]
  /** Route globs (as in rules: a route name or `METHOD /path`); none: every route. */
  readonly routes?: readonly string[]
  /** Keep only exchanges that started at least this many seconds into their run. */
  readonly since?: number
}

/** Whether `file` is the index of a rotated recording. */
export function isPartsIndex(file: string): boolean {
  return /\.index\.jsonl$/i.test(file)
}

/** The parts an index names that may hold `runs` (a part never closed is read to find out), in order. */
async function partsFor(index: string, runs: ReadonlySet<string>): Promise<string[]> {
  const parts = new Map<string, boolean>()
  for await (const { text } of readJsonLines(index, { maxBytes: Number.MAX_SAFE_INTEGER, maxLineBytes: () => 64 * 1024 * 1024, invalidCode: 'ERR_JSON_INVALID', action: `read the index ${index}`, partialLastLine: () => true })) {
    const line = JSON.parse(text) as IndexLine
    if ('opened' in line) parts.set(line.part, parts.get(line.part) ?? true)
    else if ('closed' in line) parts.set(line.part, line.runs.some((run) => runs.has(run.run)))
    else if ('deleted' in line) parts.delete(line.part)
  }
  return [...parts].filter(([, may]) => may).map(([part]) => path.join(path.dirname(index), part))
}

/** The cassette of `options.runs` cut out of `file` (a cassette, or a rotated recording's index). */
export async function extractRuns(file: string, options: ExtractOptions): Promise<Cassette> {
  const runs = new Set(options.runs)
  const sources = isPartsIndex(file) ? await partsFor(file, runs) : [file]
  const kept: CassetteExchange[] = []
  const seen = new Set<string>()
  let last: Cassette | null = null
  const claims = []
  for (const source of sources) {
    const cassette = await Cassette.load(source)
    last = cassette
    for (const exchange of cassette.exchanges) {
      seen.add(exchange.run)
      if (!runs.has(exchange.run)) continue
      if (options.routes?.length && !options.routes.some((glob) => globMatches(glob, exchange.route))) continue
      if (options.since !== undefined && exchange.started < options.since) continue
      kept.push(exchange)
    }
    claims.push(...(cassette.header.claims ?? []).filter((claim) => runs.has(claim.run)))
  }
  const missing = [...runs].filter((run) => !seen.has(run))
  if (missing.length || !last) {
    const known = [...seen].slice(0, 20)
    throw new ToolstormError('ERR_ADMIN_NOT_FOUND', `Failed to extract from ${file}: no exchange of run ${missing.map((run) => JSON.stringify(run)).join(', ')} (runs there: ${known.join(', ') || 'none'}${seen.size > known.length ? `, … ${seen.size - known.length} more` : ''}).`)
  }
  if (kept.length === 0) throw new ToolstormError('ERR_ADMIN_NOT_FOUND', `Failed to extract from ${file}: the runs have no exchange on ${options.routes?.length ? `routes ${options.routes.join(', ')}` : 'any route'}${options.since !== undefined ? ` from ${options.since} s into the run` : ''}.`)
  const { version: _version, kind: _kind, exchanges: _count, claims: _claims, ...header } = last.header
  return Cassette.from({ ...header, claims }, cutExchanges(kept), `${path.basename(file)} (runs ${[...runs].join(', ')})`)
}
