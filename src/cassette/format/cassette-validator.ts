/**
 * Load-time validation of a cassette, one line at a time: the header, then each exchange's
 * schema and its place in the sequence (positions, call ids, per-route ordinals), then the count
 * the header declared (versions 1–3) or the end line says (version 4, whose segment, settings,
 * effects, claims and end lines are checked and gathered here too: segment-lines.ts). Errors name
 * the file, the line, the JSON path and what was expected.
 * This checks consistency, not authenticity: a self-consistent file can still be forged.
 */
import { z } from 'zod'
import { CassetteError } from '../../errors.js'
import { parseStrictJson, StrictJsonError } from '../../json/strict-json.js'
import { formatIssues } from '../../engine/schema/format-issues.js'
import {
  CASSETTE_KIND,
  CASSETTE_VERSIONS,
  cassetteExchangeSchema,
  cassetteFileExchangeSchema,
  cassetteHeaderSchema,
  type CassetteClaim,
  type CassetteExchange,
  type CassetteFileExchange,
  type CassetteFileHeader,
  type CassetteHeader,
  type StoredBody,
  type StoredBodyFile,
  type StoredEffect,
} from './cassette-schema.js'
import { segmentLinesSchema, type CassetteSegment, type Continuation, type SegmentLines } from './segment-lines.js'
import { docsUrl } from '../../docs-url.js'

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/

type ExchangeSchema = typeof cassetteFileExchangeSchema | typeof cassetteExchangeSchema

/**
 * The schema's compiled form for exchanges without an `mcp` call (`z.compile`: generated code
 * first, the runtime parser, with its messages, when that fails), made on first use.
 * @note Validation was a third of a 100k-exchange load; compiled it takes half as long. An MCP
 * call's `arguments` are any JSON (a recursive schema), which `z.compile` cannot generate code
 * for, so lines with `mcp` keep the runtime parser. Same schema either way: the compiled one is
 * derived from it by omitting the one field.
 */
const compiled = new Map<ExchangeSchema, ExchangeSchema>()
function fastSchemaFor(schema: ExchangeSchema, value: unknown): ExchangeSchema {
  if (value === null || typeof value !== 'object' || 'mcp' in value) return schema
  let fast = compiled.get(schema)
  if (fast === undefined) compiled.set(schema, (fast = z.compile((schema as typeof cassetteFileExchangeSchema).omit({ mcp: true })) as unknown as ExchangeSchema))
  return fast
}
const HINT = `Record it again, or fix that line (see ${docsUrl('cassettes.md')}).`

export class CassetteValidator {
  readonly #source: string
  #header: CassetteFileHeader | null = null
  #count = 0
  readonly #calls = new Map<string, number>()
  readonly #ordinals = new Map<string, Map<string, number>>()
  /** Where each run stopped in the earlier segments: a run may go on in a later one (its next call id) rather than start again. */
  readonly #carried = new Map<string, { calls: number; ordinals: Map<string, number> }>()
  /** Version 4: the recordings in the file, in order. */
  readonly segments: CassetteSegment[] = []
  /** Version 4: effects reported after their exchange's line, by `seq`. */
  readonly lateEffects = new Map<number, StoredEffect[]>()
  /** Version 4: each run's claims as last written, by segment and run (a later line replaces an earlier one). */
  readonly #claims = new Map<string, CassetteClaim[]>()
  /** Version 4: settings of later segments (and live rule changes), applied over the header's in order. */
  #settings: Partial<CassetteHeader> = {}
  /** The largest body limit any segment declared (bounds each line's length). */
  #bodyLimit = 0
  /** Version 4: runs that go on from another part, where they resume. */
  readonly continuations: Continuation[] = []
  /** Whether each exchange reached the upstream, by `seq` − 1 (an effect needs one that did). */
  readonly #executed: boolean[] = []

  constructor(source: string) {
    this.#source = source
  }

  get header(): CassetteFileHeader | null {
    return this.#header
  }

  /** The largest body limit declared so far (bounds each line's length). */
  get bodyLimit(): number | null {
    return this.#header ? this.#bodyLimit : null
  }

  #fail(line: number, reason: string, details?: string): never {
    throw new CassetteError('ERR_CASSETTE_INVALID', `Failed to load the cassette ${this.#source}: line ${line}: ${reason}. ${HINT}`, details ? { details } : undefined)
  }

  #parse(text: string, line: number): unknown {
    if (text.trim() === '') this.#fail(line, 'expected a JSON object, got an empty line')
    // Fast path for lines as toolstorm writes them: when re-serialising gives the same text, the
    // line has no duplicate key, no NaN or huge number and no odd spacing. Anything else (a hand
    // edit) goes through the strict reader, which names what is wrong and where.
    try {
      const value: unknown = JSON.parse(text)
      if (JSON.stringify(value) === text) return value
    } catch {
      // the strict reader says why
    }
    try {
      return parseStrictJson(text, { maxDepth: 64 })
    } catch (error) {
      if (error instanceof StrictJsonError) this.#fail(line, `${error.path}: ${error.message} (column ${error.column})`)
      throw error
    }
  }

  /** Validate one line of a file; returns the exchange it holds (null for the header and version 4's other lines). Its bodies may be in body files. */
  line(text: string, line: number): CassetteFileExchange | null {
    const value = this.#parse(text, line)
    if (this.#header === null) return this.#acceptHeader(value, line)
    if (this.#header.version >= 4 && value !== null && typeof value === 'object' && 'line' in value) return this.#segmentLine(value, line)
    return this.#exchange(value, line, cassetteFileExchangeSchema)
  }

  /** Validate a header held in memory (it declares its count). */
  memoryHeader(header: CassetteHeader): void {
    this.#acceptHeader(header, 1)
  }

  #acceptHeader(value: unknown, line: number): null {
    const record = value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : null
    if (record?.kind !== CASSETTE_KIND) this.#fail(line, `expected the cassette header, an object with "kind": "${CASSETTE_KIND}" (is this a cassette?)`)
    if (!(CASSETTE_VERSIONS as readonly unknown[]).includes(record.version)) {
      const versions = `${CASSETTE_VERSIONS.slice(0, -1).join(', ')} or ${CASSETTE_VERSIONS.at(-1)}`
      this.#fail(line, `$.version: expected cassette version ${versions}, got ${JSON.stringify(record.version)} (this toolstorm reads versions ${versions.replace(' or ', ' and ')}; a newer toolstorm wrote it?)`)
    }
    const parsed = cassetteHeaderSchema.safeParse(value)
    if (!parsed.success) {
      const lines = formatIssues(parsed.error, value)
      this.#fail(line, lines[0] as string, lines.join('\n'))
    }
    const header = parsed.data
    if (header.claims && header.version < 3) this.#fail(line, `$.claims: claims in the header need cassette version 3 (the header says ${header.version})`)
    const { normalizePatterns, normalizePaths } = header.match
    if ((normalizePatterns.length || normalizePaths.length) && header.version < 4) this.#fail(line, `$.match: normalizePatterns and normalizePaths need cassette version 4 (the header says ${header.version})`)
    // A version 4 header may still declare a count (a file written whole, as before): it is checked, and a recorder rewrites the file once before appending.
    if (header.version < 4 && header.exchanges === undefined) {
      this.#fail(line, `$.exchanges: expected the number of exchange lines that follow (cassette version ${header.version})`)
    }
    this.#header = header
    this.#bodyLimit = header.bodyLimit
    if (header.version >= 4) this.segments.push({ started: header.recorded, first: 1, exchanges: 0, ended: false })
    return null
  }

  /** A version 4 line that is not an exchange: checked against what came before it, and gathered. */
  #segmentLine(value: object, line: number): null {
    const parsed = segmentLinesSchema.safeParse(value)
    if (!parsed.success) {
      const lines = formatIssues(parsed.error, value)
      this.#fail(line, lines[0] as string, lines.join('\n'))
    }
    const mark: SegmentLines = parsed.data
    const current = this.segments.at(-1) as CassetteSegment
    switch (mark.line) {
      case 'segment':
        if (mark.after !== this.#count) this.#fail(line, `$.after: expected ${this.#count} (the exchanges before this segment)`)
        this.segments.push({ started: mark.started, first: this.#count + 1, exchanges: 0, ended: false, ...(mark.recovered ? { recovered: mark.recovered } : {}) })
        this.#applySettings(mark.settings)
        // A new recording numbers each run's calls from 1 again, or goes on with a run an earlier
        // segment holds (a process that continued the run: `toolstorm mcp --state-dir`).
        for (const [run, calls] of this.#calls) this.#carried.set(run, { calls, ordinals: this.#ordinals.get(run) ?? new Map() })
        this.#calls.clear()
        this.#ordinals.clear()
        break
      case 'settings':
        this.#applySettings(mark.settings)
        break
      case 'effects': {
        if (mark.seq > this.#count) this.#fail(line, `$.seq: expected an exchange written before this line (${this.#count} so far)`)
        if (!this.#executed[mark.seq - 1]) this.#fail(line, `$.effects: exchange ${mark.seq} never reached the upstream, so it cannot commit an effect`)
        const effects = this.lateEffects.get(mark.seq)
        if (effects) effects.push(...mark.effects)
        else this.lateEffects.set(mark.seq, [...mark.effects])
        break
      }
      case 'claims': {
        const key = `${this.segments.length}\u0000${mark.run}`
        // A later line for the run replaces the earlier one: keep insertion order by deleting first.
        this.#claims.delete(key)
        this.#claims.set(key, mark.claims.map((claim) => ({ run: mark.run, ...claim })))
        break
      }
      case 'continues': {
        if ((this.#calls.get(mark.run) ?? 0) > 0) this.#fail(line, `$.run: run "${mark.run}" already has calls here (a run continues from another part before its first call in this one)`)
        this.#calls.set(mark.run, mark.calls)
        this.#ordinals.set(mark.run, new Map(Object.entries(mark.ordinals)))
        const { line: _line, ...continuation } = mark
        this.continuations.push({ ...continuation, seq: this.#count + 1 })
        break
      }
      case 'end':
        if (mark.exchanges !== this.#count) this.#fail(line, `$.exchanges: the end line says ${mark.exchanges} exchange(s), but ${this.#count} precede it, so lines are missing`)
        current.ended = true
        if (mark.ended) current.endedAt = mark.ended
        break
    }
    return null
  }

  #applySettings(settings: Partial<CassetteHeader>): void {
    this.#settings = { ...this.#settings, ...settings }
    if (settings.bodyLimit !== undefined) this.#bodyLimit = Math.max(this.#bodyLimit, settings.bodyLimit)
  }

  /** Validate an exchange held in memory, every body inline (HAR import and in-memory cassettes). */
  exchange(value: unknown, line: number): CassetteExchange {
    return this.#exchange(value, line, cassetteExchangeSchema) as CassetteExchange
  }

  #exchange(value: unknown, line: number, schema: ExchangeSchema): CassetteFileExchange {
    const header = this.#header
    if (header === null) this.#fail(line, 'expected the header first')
    if (header.exchanges !== undefined && this.#count >= header.exchanges) this.#fail(line, `the header declares ${header.exchanges} exchange(s), but more follow`)
    const segment = this.segments.at(-1)
    if (segment?.ended) this.#fail(line, 'an exchange after the end line (a new recording starts with a segment line)')
    // Checked in place (assert-only, no copy made): the exchange schema has no default and no
    // transform, so a valid line's parsed JSON is already its output. Only a failing line is
    // parsed again, for the issues.
    if (!fastSchemaFor(schema, value).validate(value)) {
      const parsed = schema.safeParse(value)
      const lines = parsed.success ? ['expected a valid exchange'] : formatIssues(parsed.error, value)
      this.#fail(line, lines[0] as string, lines.join('\n'))
    }
    const exchange = value as CassetteFileExchange
    this.#count++
    if (segment) {
      segment.exchanges++
      this.#executed.push(exchange.executed)
    }
    if (exchange.seq !== this.#count) this.#fail(line, `$.seq: expected ${this.#count} (positions are contiguous)`)
    const refused = exchange.call === null
    if (refused !== (exchange.ordinal === null) || refused !== (exchange.key === null)) this.#fail(line, '$.call: expected call, ordinal and key to be all set, or all null (a refused call)')
    if (!refused) {
      const carried = this.#calls.has(exchange.run) ? undefined : this.#carried.get(exchange.run)
      if (carried && exchange.call === carried.calls + 1) {
        this.#calls.set(exchange.run, carried.calls)
        this.#ordinals.set(exchange.run, new Map(carried.ordinals))
      }
      const last = this.#calls.get(exchange.run) ?? 0
      // A run reset (POST /reset) starts its call ids and ordinals again.
      if (exchange.call === 1 && last > 0) this.#ordinals.delete(exchange.run)
      else if (exchange.call !== last + 1) this.#fail(line, `$.call: expected ${last + 1} (the next call id of run "${exchange.run}")`)
      this.#calls.set(exchange.run, exchange.call as number)
      let ordinals = this.#ordinals.get(exchange.run)
      if (!ordinals) this.#ordinals.set(exchange.run, (ordinals = new Map()))
      const ordinal = (ordinals.get(exchange.route) ?? 0) + 1
      if (exchange.ordinal !== ordinal) this.#fail(line, `$.ordinal: expected ${ordinal} (the running count for route "${exchange.route}" in run "${exchange.run}")`)
      ordinals.set(exchange.route, ordinal)
      if (exchange.parent !== null && exchange.parent >= (exchange.call as number)) this.#fail(line, '$.parent: expected an earlier call')
    } else if (exchange.parent !== null || exchange.fault !== null || exchange.executed) {
      this.#fail(line, '$.call: a refused call has no parent, no fault and never reached the upstream')
    }
    if (exchange.outcome === 'response' && exchange.response === null) this.#fail(line, '$.response: expected the response the client received (outcome is "response")')
    if (exchange.outcome === 'reset' && exchange.response !== null) this.#fail(line, '$.response: expected null (the client saw a reset)')
    if (exchange.upstream !== null && !exchange.executed) this.#fail(line, '$.upstream: an upstream answer requires "executed": true')
    if (exchange.fault?.injected && exchange.fault.phase !== 'before-upstream' && !exchange.executed) this.#fail(line, '$.fault: a fault after the upstream answered requires "executed": true')
    if (exchange.effects.length && !exchange.executed) this.#fail(line, '$.effects: a call that never reached the upstream cannot commit an effect')
    this.#checkBody(exchange.request.body, '$.request.body', line)
    this.#checkBody(exchange.response?.body ?? null, '$.response.body', line)
    this.#checkBody(exchange.upstream?.body ?? null, '$.upstream.body', line)
    if (exchange.response?.stream) this.#checkStream(exchange.response, line)
    if (exchange.cut && !exchange.fault?.injected) this.#fail(line, '$.cut: a cut stream requires an injected fault')
    return exchange
  }

  /** The events index the stored body in order, at times that never go back. */
  #checkStream(response: NonNullable<CassetteFileExchange['response']>, line: number): void {
    const { events, end } = response.stream as NonNullable<CassetteFileExchange['response']>['stream'] & object
    let total = 0
    let previous = 0
    for (const [index, event] of events.entries()) {
      if (event.at < previous) this.#fail(line, `$.response.stream.events[${index}].at: expected at least ${previous} (events are in the order they arrived)`)
      if (event.at > end) this.#fail(line, `$.response.stream.events[${index}].at: expected at most the stream's end (${end})`)
      previous = event.at
      total += event.bytes
    }
    const body = response.body
    const stored = body === null ? 0 : 'file' in body ? body.bytes : Buffer.byteLength(body.data, body.encoding)
    if (total !== stored) this.#fail(line, `$.response.stream.events: the events cover ${total} byte(s), but the stored body has ${stored} (each event is a slice of the body, in order)`)
  }

  #checkBody(body: StoredBody | StoredBodyFile | null, path: string, line: number): void {
    if (body === null) return
    if ('file' in body) {
      if ((this.#header as CassetteHeader).version < 2) this.#fail(line, `${path}.file: a body in a body file needs cassette version 2 (the header says ${(this.#header as CassetteHeader).version})`)
      return
    }
    if (body.encoding !== 'base64') return
    if (body.data.length % 4 !== 0 || !BASE64.test(body.data)) this.#fail(line, `${path}.data: expected base64 (the encoding says so)`)
  }

  /**
   * The file ended: every declared exchange must have been there. Returns the header as a loaded
   * cassette has it: its count, and (version 4) the latest settings and the claims lines' claims.
   */
  end(lastLine: number): CassetteHeader {
    const header = this.#header
    if (header === null) throw new CassetteError('ERR_CASSETTE_INVALID', `Failed to load the cassette ${this.#source}: the file is empty (expected a header line). ${HINT}`)
    if (header.version >= 4 && (this.#count === header.exchanges || header.exchanges === undefined)) {
      const claims = [...(header.claims ?? []), ...[...this.#claims.values()].flat()]
      const { claims: _none, ...rest } = header
      return { ...rest, ...this.#settings, bodyLimit: this.#bodyLimit, exchanges: this.#count, ...(claims.length ? { claims } : {}) }
    }
    if (this.#count !== header.exchanges) {
      throw new CassetteError(
        'ERR_CASSETTE_INVALID',
        `Failed to load the cassette ${this.#source}: line ${lastLine}: the file ends after ${this.#count} of the ${header.exchanges} exchange(s) its header declares, so it is truncated. Record it again, or restore the previous copy.`,
      )
    }
    return header as CassetteHeader
  }
}
