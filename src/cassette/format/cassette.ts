/**
 * A loaded cassette: its header and its exchanges, validated. Load from a JSON Lines file
 * (streamed, line by line), save atomically.
 *
 * @example
 * const cassette = await Cassette.load('fixtures/incident.cassette.jsonl')
 * cassette.exchanges.length // 12
 * await cassette.save('copy.cassette.jsonl')
 */
import { CassetteError } from '../../errors.js'
import { CASSETTE_KIND, CASSETTE_VERSION, DEFAULT_BODY_LIMIT, defaultMatchOptions, MAX_BODY_LIMIT, type CassetteClaim, type CassetteExchange, type CassetteFileHeader, type CassetteHeader, type StoredEffect } from './cassette-schema.js'
import type { CassetteSegment, ClaimsLine, Continuation, ContinuesLine, EndLine, SegmentLine } from './segment-lines.js'
import type { Report } from '../../engine/schema/report.js'
import { readJsonLines } from '../../io/read-json-lines.js'
import { writeLinesAtomic } from '../../io/write-lines-atomic.js'
import { VERSION } from '../../version.js'
import { BodyFileReader, BodyFileWriter, bodiesFolderFor, hasBodyFiles } from './body-files.js'
import { CassetteValidator } from './cassette-validator.js'
import { reportsFromCassette } from './reports-from-cassette.js'

/** Default bound on a cassette file: 4 GiB. */
export const DEFAULT_MAX_CASSETTE_BYTES = 4 * 1024 ** 3
/** Bytes the header line may have: room for the recorded claims (version 3), each a few hundred bytes. */
const HEADER_LINE_BYTES = 64 * 1024 * 1024

export interface LoadCassetteOptions {
  /** Bytes the file may have. Default 4 GiB. */
  maxBytes?: number
  /** Bytes one line may have. Default: 16 MiB plus 8 × the header's body limit. */
  maxLineBytes?: number
}

/** Header fields a new cassette needs; the rest get defaults. */
export type CassetteHeaderInput = Partial<Omit<CassetteHeader, 'version' | 'kind' | 'exchanges'>>

/** A complete header with defaults for what `input` leaves out. */
export function cassetteHeader(input: CassetteHeaderInput, exchanges: number): CassetteHeader {
  return {
    version: CASSETTE_VERSION,
    kind: CASSETTE_KIND,
    toolstorm: input.toolstorm ?? VERSION,
    recorded: input.recorded ?? new Date().toISOString(),
    source: input.source ?? 'in-process',
    targets: input.targets ?? [],
    exchanges,
    seed: input.seed ?? 0,
    clock: input.clock ?? 'real',
    maxCalls: input.maxCalls ?? null,
    routes: input.routes ?? {},
    rules: input.rules ?? [],
    bodyLimit: input.bodyLimit ?? DEFAULT_BODY_LIMIT,
    match: input.match ?? defaultMatchOptions(),
    redaction: input.redaction ?? { keys: [], secrets: 0 },
    ...(input.claims?.length ? { claims: input.claims } : {}),
  }
}

/** The header line a version 4 file starts with: no count, no claims (later lines hold them). */
export function fileHeader(header: CassetteHeader | CassetteFileHeader): CassetteFileHeader {
  const { exchanges: _count, claims: _claims, ...rest } = header
  return { ...rest, version: CASSETTE_VERSION }
}

/** The claims lines of `claims`: one per run, in the order the runs first appear. */
export function claimsLines(claims: readonly CassetteClaim[]): ClaimsLine[] {
  const byRun = new Map<string, ClaimsLine>()
  for (const { run, ...claim } of claims) {
    let line = byRun.get(run)
    if (!line) byRun.set(run, (line = { line: 'claims', run, claims: [] }))
    line.claims.push(claim)
  }
  return [...byRun.values()]
}

/** Exchanges with the effects reported after their line (version 4's effects lines) added. */
function withLateEffects(exchanges: CassetteExchange[], late: ReadonlyMap<number, StoredEffect[]>): CassetteExchange[] {
  for (const [seq, effects] of late) {
    const exchange = exchanges[seq - 1] as CassetteExchange
    exchanges[seq - 1] = { ...exchange, effects: [...exchange.effects, ...effects] }
  }
  return exchanges
}

export class Cassette {
  readonly header: CassetteHeader
  readonly exchanges: readonly CassetteExchange[]
  /** Where it came from, for messages (a file name, or `<memory>`). */
  readonly source: string
  /**
   * The recordings it holds, in order: one, unless recorders appended to it (a restart on the same
   * file). A segment that did not end cleanly was stopped by a `kill -9` or a crash.
   */
  readonly segments: readonly CassetteSegment[]
  /** Bytes at the end of the file that were not a complete line (a write a `kill -9` interrupted), skipped. Version 4 only. */
  readonly interruptedBytes: number
  /** Runs that go on from another part of a rotated recording: their call ids and ordinals resume where that part left them. */
  readonly continuations: readonly Continuation[]

  private constructor(header: CassetteHeader, exchanges: readonly CassetteExchange[], source: string, segments?: readonly CassetteSegment[], interruptedBytes = 0, continuations: readonly Continuation[] = []) {
    this.header = header
    this.exchanges = exchanges
    this.source = source
    this.segments = segments?.length ? segments : [{ started: header.recorded, first: 1, exchanges: exchanges.length, ended: true }]
    this.interruptedBytes = interruptedBytes
    this.continuations = continuations
  }

  /**
   * Load and validate a cassette file, streaming it line by line. Bodies kept in body files
   * (`NAME.bodies/`, beside it) are read and verified, so in memory every body is inline.
   */
  static async load(file: string, options: LoadCassetteOptions = {}): Promise<Cassette> {
    const validator = new CassetteValidator(file)
    const bodies = new BodyFileReader(file)
    const exchanges: CassetteExchange[] = []
    let last = 0
    let interrupted = 0
    const lines = readJsonLines(file, {
      maxBytes: options.maxBytes ?? DEFAULT_MAX_CASSETTE_BYTES,
      maxLineBytes: (n) => options.maxLineBytes ?? (n === 1 ? HEADER_LINE_BYTES : 16 * 1024 * 1024 + 8 * (validator.bodyLimit ?? MAX_BODY_LIMIT)),
      invalidCode: 'ERR_CASSETTE_INVALID',
      action: `load the cassette ${file}`,
      // Version 4 is append-only: a last line without its newline is a write that was interrupted.
      partialLastLine: (bytes) => ((validator.header?.version ?? 0) >= 4 ? ((interrupted = bytes), true) : false),
    })
    for await (const { text, number } of lines) {
      last = number
      const exchange = validator.line(text, number)
      if (exchange) exchanges.push(hasBodyFiles(exchange) ? await bodies.exchange(exchange, number) : (exchange as CassetteExchange))
    }
    const header = validator.end(last)
    return new Cassette(header, withLateEffects(exchanges, validator.lateEffects), file, validator.segments, interrupted, validator.continuations)
  }

  /** Parse cassette text (JSON Lines) already in memory. */
  static parse(text: string, source = '<memory>'): Cassette {
    const validator = new CassetteValidator(source)
    const exchanges: CassetteExchange[] = []
    const lines = text.split('\n')
    const partial = lines.pop() as string
    let interrupted = 0
    lines.forEach((line, index) => {
      const exchange = validator.line(line.endsWith('\r') ? line.slice(0, -1) : line, index + 1)
      if (exchange && hasBodyFiles(exchange)) {
        throw new CassetteError('ERR_CASSETTE_INVALID', `Failed to load the cassette ${source}: line ${index + 1}: a body is in a body file beside the cassette, and text holds no files. Load it from its file with Cassette.load(), which reads them.`)
      }
      if (exchange) exchanges.push(exchange as CassetteExchange)
    })
    if (partial !== '') {
      if ((validator.header?.version ?? 0) < 4) throw new CassetteError('ERR_CASSETTE_INVALID', `Failed to load the cassette ${source}: line ${lines.length + 1} ends without a newline, so the file is truncated. Record it again, or restore the previous copy.`)
      interrupted = Buffer.byteLength(partial)
    }
    const header = validator.end(lines.length)
    return new Cassette(header, withLateEffects(exchanges, validator.lateEffects), source, validator.segments, interrupted, validator.continuations)
  }

  /** Build a cassette from exchanges (validated as if loaded). `exchanges` in the header is set for you. */
  static from(header: CassetteHeaderInput, exchanges: readonly unknown[], source = '<memory>'): Cassette {
    const validator = new CassetteValidator(source)
    validator.memoryHeader(cassetteHeader(header, exchanges.length))
    const parsed = exchanges.map((exchange, index) => validator.exchange(exchange, index + 2))
    return new Cassette(validator.end(exchanges.length + 1), parsed, source)
  }

  /**
   * A cassette from a report: each call becomes an exchange with its status or reset, its fault
   * and its effects, but no headers or bodies (reports keep none). Replay then matches method and
   * URL only, and answers with empty bodies: a fixture for the shape of an incident, not its content.
   */
  static fromReport(report: Report): Cassette {
    const effects = new Map<number, Report['effects']>()
    for (const effect of report.effects) effects.set(effect.call, [...(effects.get(effect.call) ?? []), effect])
    const exchanges = report.calls
      .filter((call) => call.outcome !== 'running')
      .map((call, index) => ({
        seq: index + 1,
        run: report.run,
        call: call.id,
        route: call.route,
        ordinal: call.ordinal,
        key: call.key,
        parent: call.parent,
        started: call.started,
        elapsed: call.elapsed ?? 0,
        request: { method: call.method, url: call.url, headers: {}, body: null, bodyUnknown: true },
        outcome: call.outcome,
        response: call.status === null || call.outcome === 'reset' ? null : { status: call.status, headers: {}, body: null },
        upstream: call.upstreamStatus !== null && call.upstreamStatus !== call.status ? { status: call.upstreamStatus, headers: {}, body: null } : null,
        executed: call.executed,
        fault: call.fault && call.kind && call.phase ? { rule: call.fault, kind: call.kind, phase: call.phase, injected: call.injected } : null,
        retryAfter: call.retryAfter,
        error: call.error,
        effects: (effects.get(call.id) ?? []).map(({ name, key, at, identity, redacted }) => ({ name, key, at, identity, redacted })),
        ...(call.model ? { model: call.model } : {}),
        ...(call.cut ? { cut: call.cut } : {}),
      }))
    return Cassette.from({ seed: report.seed, clock: report.clock, maxCalls: report.maxCalls, routes: report.routes, rules: report.rules, toolstorm: report.toolstorm, claims: report.claims?.map((claim) => ({ run: report.run, ...claim })) }, exchanges, `the report of run ${report.run}`)
  }

  /**
   * The lines of a self-contained cassette (no newlines), in the current version, every body inline
   * unless `body` puts it in a file: the header, each segment's exchanges after its segment line,
   * the claims, and an end line after each segment that ended.
   */
  *lines(): Generator<string> {
    for (const line of this.#fileLines()) yield typeof line === 'string' ? line : JSON.stringify(line)
  }

  /** The file's lines: strings, or an exchange (so `save` can move its large bodies into files). */
  *#fileLines(): Generator<string | CassetteExchange> {
    const { header, exchanges, segments } = this
    const continuations = new Map<number, Continuation[]>()
    for (const continuation of this.continuations) continuations.set(continuation.seq, [...(continuations.get(continuation.seq) ?? []), continuation])
    yield JSON.stringify(fileHeader(header))
    let written = 0
    for (const [index, segment] of segments.entries()) {
      if (index > 0) {
        const settings = { toolstorm: header.toolstorm, source: header.source, targets: header.targets, seed: header.seed, clock: header.clock, maxCalls: header.maxCalls, routes: header.routes, rules: header.rules, bodyLimit: header.bodyLimit, redaction: header.redaction }
        yield JSON.stringify({ line: 'segment', started: segment.started, after: written, settings, ...(segment.recovered ? { recovered: segment.recovered } : {}) } satisfies SegmentLine)
      }
      const end = index === segments.length - 1 ? exchanges.length : Math.min(exchanges.length, written + segment.exchanges)
      for (; written < end; written++) {
        for (const { seq: _seq, ...rest } of continuations.get(written + 1) ?? []) yield JSON.stringify({ line: 'continues', ...rest } satisfies ContinuesLine)
        yield exchanges[written] as CassetteExchange
      }
      if (index === segments.length - 1) for (const line of claimsLines(header.claims ?? [])) yield JSON.stringify(line)
      // The same cassette makes the same file: an end time only when one was recorded.
      if (segment.ended) yield JSON.stringify({ line: 'end', ...(segment.endedAt ? { ended: segment.endedAt } : {}), exchanges: written } satisfies EndLine)
    }
  }

  /** The whole cassette as text, every body inline (small cassettes, an export; `save` streams and keeps large bodies in files). */
  toString(): string {
    let out = ''
    for (const line of this.lines()) out += line + '\n'
    return out
  }

  /**
   * Write the cassette atomically (temporary file + rename, owner-only permissions), in the
   * current version: bodies over 64 KiB go to body files beside it (`NAME.bodies/`), written
   * first; files no line needs any more are removed afterwards (body-files.ts).
   */
  async save(file: string): Promise<void> {
    const bodies = new BodyFileWriter(bodiesFolderFor(file))
    await writeLinesAtomic(
      file,
      (async function* (lines) {
        for (const line of lines) yield typeof line === 'string' ? line : JSON.stringify(await bodies.exchange(line))
      })(this.#fileLines()),
      { beforeRename: () => bodies.sync() },
    )
    await bodies.sweep()
  }

  /** One report per run, rebuilt from the exchanges (for `inspect`, `check` and contracts). */
  toReports(): Report[] {
    return reportsFromCassette(this)
  }
}

export type { CassetteExchange, CassetteHeader }
