/**
 * Cut runs out of a stopped recording (`toolstorm extract`): a cassette, or the index of a rotated
 * one (`STEM.index.jsonl`, whose parts are read where the run is). The runs' exchanges (optionally
 * only some routes, only from some seconds into the run) become a small cassette of their own,
 * renumbered so it is valid (cut-exchanges.ts), with those runs' claims, its bodies inline in
 * memory and in body files once saved. The lines kept are validated; the rest are only scanned, and
 * the cassette made of them is validated whole, as any cassette.
 */
import path from 'node:path'
import { ToolstormError } from '../../errors.js'
import { globMatches } from '../../engine/glob.js'
import { readJsonLines } from '../../io/read-json-lines.js'
import type { IndexLine } from './parts-index.js'
import { cassetteFileExchangeSchema, type CassetteClaim, type CassetteExchange, type CassetteHeader, type StoredEffect } from './cassette-schema.js'
import { Cassette, DEFAULT_MAX_CASSETTE_BYTES } from './cassette.js'
import { CassetteValidator } from './cassette-validator.js'
import { BodyFileReader, hasBodyFiles } from './body-files.js'
import { CassetteError } from '../../errors.js'
import { formatIssues } from '../../engine/schema/format-issues.js'
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

/** An exchange line's run, read off its first bytes (`{"seq":N,"run":"…"`, as toolstorm writes them), or null. */
const RUN_OF_LINE = /^\{"seq":\d+,"run":("(?:[^"\\]|\\.)*")/

/**
 * The exchanges (bodies inline), claims and header of `runs` in one cassette file, reading the
 * other runs' lines no further than their first bytes: only the lines kept are parsed and
 * validated (the exchange schema, their body files), so cutting one run out of 100,000 exchanges
 * costs a scan, not a load. A line not written as toolstorm writes them is parsed to find its run.
 */
async function runsOfFile(file: string, runs: ReadonlySet<string>, seen: Set<string>): Promise<{ header: CassetteHeader; exchanges: CassetteExchange[]; claims: CassetteClaim[] }> {
  const validator = new CassetteValidator(file)
  const bodies = new BodyFileReader(file)
  const exchanges: CassetteExchange[] = []
  const bySeq = new Map<number, CassetteExchange>()
  const claims = new Map<string, CassetteClaim[]>()
  let header: CassetteHeader | null = null
  for await (const { text, number } of readJsonLines(file, { maxBytes: DEFAULT_MAX_CASSETTE_BYTES, maxLineBytes: () => Number.MAX_SAFE_INTEGER, invalidCode: 'ERR_CASSETTE_INVALID', action: `read the cassette ${file}`, partialLastLine: () => (validator.header?.version ?? 0) >= 4 })) {
    if (number === 1) {
      validator.line(text, 1)
      header = { ...(validator.header as CassetteHeader), exchanges: 0 }
      continue
    }
    const quick = RUN_OF_LINE.exec(text)
    const value = quick ? null : (JSON.parse(text) as { seq?: number; run?: string; line?: string; effects?: StoredEffect[]; claims?: CassetteClaim[] })
    if (value?.line === 'effects') {
      const exchange = bySeq.get(value.seq as number)
      if (exchange) exchange.effects.push(...(value.effects ?? []))
      continue
    }
    if (value?.line === 'claims') {
      if (runs.has(value.run as string)) claims.set(value.run as string, (value.claims ?? []).map((claim) => ({ ...claim, run: value.run as string })))
      continue
    }
    if (value?.line !== undefined) continue
    const run = quick ? (JSON.parse(quick[1] as string) as string) : (value?.run as string)
    seen.add(run)
    if (!runs.has(run)) continue
    const parsed = cassetteFileExchangeSchema.safeParse(JSON.parse(text))
    if (!parsed.success) throw new CassetteError('ERR_CASSETTE_INVALID', `Failed to read the cassette ${file}: line ${number}: ${formatIssues(parsed.error, JSON.parse(text))[0]}.`)
    const exchange = hasBodyFiles(parsed.data) ? await bodies.exchange(parsed.data, number) : (parsed.data as CassetteExchange)
    exchanges.push(exchange)
    bySeq.set(exchange.seq, exchange)
  }
  if (!header) throw new CassetteError('ERR_CASSETTE_INVALID', `Failed to read the cassette ${file}: the file is empty (expected a header line).`)
  // A version 3 file keeps its claims in the header.
  const own = header.claims?.filter((claim) => runs.has(claim.run)) ?? []
  return { header, exchanges, claims: [...own, ...[...claims.values()].flat()] }
}

/** The cassette of `options.runs` cut out of `file` (a cassette, or a rotated recording's index). */
export async function extractRuns(file: string, options: ExtractOptions): Promise<Cassette> {
  const runs = new Set(options.runs)
  const sources = isPartsIndex(file) ? await partsFor(file, runs) : [file]
  const kept: CassetteExchange[] = []
  const seen = new Set<string>()
  let last: CassetteHeader | null = null
  const claims: CassetteClaim[] = []
  for (const source of sources) {
    const found = await runsOfFile(source, runs, seen)
    last = found.header
    for (const exchange of found.exchanges) {
      if (options.routes?.length && !options.routes.some((glob) => globMatches(glob, exchange.route))) continue
      if (options.since !== undefined && exchange.started < options.since) continue
      kept.push(exchange)
    }
    claims.push(...found.claims)
  }
  const missing = [...runs].filter((run) => !seen.has(run))
  if (missing.length || !last) {
    const known = [...seen].slice(0, 20)
    throw new ToolstormError('ERR_ADMIN_NOT_FOUND', `Failed to extract from ${file}: no exchange of run ${missing.map((run) => JSON.stringify(run)).join(', ')} (runs there: ${known.join(', ') || 'none'}${seen.size > known.length ? `, … ${seen.size - known.length} more` : ''}).`)
  }
  if (kept.length === 0) throw new ToolstormError('ERR_ADMIN_NOT_FOUND', `Failed to extract from ${file}: the runs have no exchange on ${options.routes?.length ? `routes ${options.routes.join(', ')}` : 'any route'}${options.since !== undefined ? ` from ${options.since} s into the run` : ''}.`)
  const { version: _version, kind: _kind, exchanges: _count, claims: _claims, ...header } = last
  return Cassette.from({ ...header, claims }, cutExchanges(kept), `${path.basename(file)} (runs ${[...runs].join(', ')})`)
}
