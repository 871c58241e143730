/**
 * Strict replay as a state machine, shared by the replay server and in-process replay: which
 * recorded exchange answers each request, and the verdict with its table of expected vs seen.
 *
 * - `order: 'strict'` (default): a request takes the next position when its head arrives (so
 *   concurrent requests keep their arrival order while their bodies stream in) and must match the
 *   exchange recorded there. The first divergence fails the replay for good: later requests are
 *   refused, because the position is no longer meaningful.
 * - `order: 'any'`: a request takes the first unused exchange that matches it, wherever it is
 *   (vcrpy and nock's default). A miss fails the verdict, other requests are still served.
 * - `allowRepeats`: a request that matches an exchange already used replays it again (the last one
 *   recorded for that request), instead of failing as extra.
 * - `allowUnused`: recorded exchanges never requested do not fail the verdict.
 * - A response whose body was cut at the body limit when recorded is served as its stored
 *   prefix, then breaks off (replay-stream.ts); its row says `truncated` and it fails the verdict
 *   unless `allowTruncated`: a replay never passes off a truncated body as whole.
 *
 * Lookups never scan the cassette: positions are an index, and requests are indexed by a key of
 * their normalised, redacted method, path, query, body and chosen headers (replay-request.ts).
 * What it decided is kept by its tally (replay-verdict.ts); a miss names the closest recorded
 * exchange (closest-exchange.ts).
 */
import { CassetteMismatchError, type CassetteError } from '../../errors.js'
import { createRedactor, type Redactor } from '../../redact/index.js'
import type { CassetteExchange, MatchOptions } from '../format/cassette-schema.js'
import type { Cassette } from '../format/cassette.js'
import { describeDifference, matchView, splitUrl, type MatchView } from '../format/match-key.js'
import { globMatches } from '../../engine/glob.js'
import { ClosestExchange, indexPosition } from './closest-exchange.js'
import { formatMissDiff, summarizeMissDiff, type MissDiff } from './miss-diff.js'
import type { ReplayOptions, ReplayOrder } from './replay-options.js'
import { describeExchange, describeSeen } from './replay-labels.js'
import { normaliseRequest, type LiveRequest, type NormalisedRequest } from './replay-request.js'
import { checkReplaySpeed, type ReplaySpeed } from './replay-stream.js'
import { ReplayTally, type ReplayFailureCode, type ReplayVerdict } from './replay-verdict.js'
import { docsUrl } from '../../docs-url.js'

export type ReplayDecision =
  | { readonly type: 'serve'; readonly exchange: CassetteExchange; readonly position: number; readonly repeat: boolean }
  | { readonly type: 'passthrough' }
  | { readonly type: 'refuse'; readonly error: CassetteError; readonly diff: MissDiff | null }

/** A request's claim on a position, taken when its head arrives. */
export interface ReplayTicket {
  readonly request: number
  readonly position: number | null
}

export class ReplaySession {
  readonly cassette: Cassette
  readonly order: ReplayOrder
  /** How event streams are played (see `ReplayOptions.speed`). */
  readonly speed: ReplaySpeed
  readonly #options: ReplayOptions
  readonly #match: MatchOptions
  readonly #redactor: Redactor
  /** The cassette stores paths (recorded behind a reverse proxy, or by the fixture): requests are shown by path too. */
  readonly #pathsOnly: boolean
  /** Match views by position, computed when first needed (a strict replay only looks at the next one). */
  readonly #views: Array<MatchView | undefined>
  /** What the replay did and its verdict. */
  readonly #tally: ReplayTally
  /** A miss's closest recorded exchange. */
  readonly #closest: ClosestExchange
  /** Positions by key, for `order: 'any'` (built at construction) … */
  readonly #index = new Map<string, number[]>()
  /** … and used positions by key, for repeats (grows as exchanges are served). */
  readonly #usedByKey = new Map<string, number[]>()
  readonly #size: number
  /** Per key: how many of its positions are used up (for `order: 'any'`). */
  readonly #cursor = new Map<string, number>()
  readonly #served: Uint8Array
  readonly #released: number[] = []
  readonly #servedLog: number[] = []
  #next = 0
  #requests = 0
  /** Recorded exchanges on live routes: never replayed, never unused (null: none). */
  readonly #liveAt: Uint8Array | null

  constructor(cassette: Cassette, options: ReplayOptions = {}) {
    this.cassette = cassette
    this.#options = options
    this.order = options.passthroughUnmatched ? 'any' : (options.order ?? 'strict')
    this.speed = checkReplaySpeed(options.speed)
    const recorded = cassette.header.match
    this.#match = {
      headers: (options.match?.headers ?? recorded.headers).map((name) => name.toLowerCase()),
      ignoreQuery: options.match?.ignoreQuery ?? recorded.ignoreQuery,
      ignoreBodyFields: options.match?.ignoreBodyFields ?? recorded.ignoreBodyFields,
      normalize: options.match?.normalize ?? recorded.normalize,
      normalizePatterns: options.match?.normalizePatterns ?? recorded.normalizePatterns,
      normalizePaths: options.match?.normalizePaths ?? recorded.normalizePaths,
    }
    this.#redactor = options.redactor ?? createRedactor({ keys: cassette.header.redaction.keys })
    this.#tally = new ReplayTally(cassette, options)
    this.#closest = new ClosestExchange(cassette, this.#match, (position) => this.#view(position), (position) => !this.#served[position] && !this.#liveAt?.[position])
    this.#pathsOnly = cassette.exchanges.length > 0 && cassette.exchanges.every((exchange) => exchange.request.url.startsWith('/'))
    this.#served = new Uint8Array(cassette.exchanges.length)
    this.#size = cassette.exchanges.length
    this.#views = new Array<MatchView | undefined>(this.#size)
    this.#liveAt = options.live?.length || options.replayOnly?.length ? new Uint8Array(this.#size) : null
    if (this.#liveAt) {
      for (let position = 0; position < this.#size; position++) {
        const exchange = cassette.exchanges[position] as CassetteExchange
        if (this.isLive(exchange.route, exchange.request.method, exchange.request.url)) this.#liveAt[position] = 1
      }
    }
    if (this.order === 'any') for (let position = 0; position < this.#size; position++) if (!this.#liveAt?.[position]) indexPosition(this.#index, this.#view(position).key, position)
  }

  /** Whether a request on `route` (`method url`) goes to the network (`live` / `replayOnly`). */
  isLive(route: string | undefined, method: string, url: string): boolean {
    const { live = [], replayOnly = [] } = this.#options
    if (live.length === 0 && replayOnly.length === 0) return false
    const path = `${method.toUpperCase()} ${splitUrl(url).path}`
    const matches = (globs: readonly string[]) => globs.some((glob) => (route !== undefined && globMatches(glob, route)) || globMatches(glob, path))
    return matches(live) || (replayOnly.length > 0 && !matches(replayOnly))
  }

  /** Note a request sent to the network because its route is live (it takes no position). */
  noteLive(seen: string): void {
    const request = ++this.#requests
    this.#tally.live++
    this.#tally.row(request, null, seen, 'live (sent to the network)')
  }

  #view(position: number): MatchView {
    let view = this.#views[position]
    if (view === undefined) this.#views[position] = view = matchView((this.cassette.exchanges[position] as CassetteExchange).request, this.#match)
    return view
  }

  get matchOptions(): MatchOptions {
    return this.#match
  }

  /** Whether the verdict already failed. */
  get failed(): boolean {
    return this.#tally.failure !== null
  }

  /** Claim a position for a request whose head just arrived (call synchronously, in arrival order). */
  begin(): ReplayTicket {
    const request = ++this.#requests
    if (this.order !== 'strict' || this.#tally.failure) return { request, position: null }
    if (this.#released.length) return { request, position: this.#released.shift() as number }
    while (this.#liveAt?.[this.#next]) this.#next++
    const position = this.#next < this.#size ? this.#next++ : null
    return { request, position }
  }

  /**
   * Give back the position of a request that was never decided (a fault or the call budget
   * answered it first): the next request takes it.
   */
  release(ticket: ReplayTicket): void {
    const position = ticket.position
    if (position === null || this.#served[position]) return
    let at = 0
    while (at < this.#released.length && (this.#released[at] as number) < position) at++
    this.#released.splice(at, 0, position)
  }

  /** Normalise a live request as the recording stored requests (redacted, bounded). */
  normalise(request: LiveRequest): Promise<NormalisedRequest> {
    return normaliseRequest(request, this.cassette.header.bodyLimit, this.#redactor, this.#match)
  }

  get redactor(): Redactor {
    return this.#redactor
  }

  /** Decide what answers the request holding `ticket`. */
  async decide(ticket: ReplayTicket, request: LiveRequest): Promise<ReplayDecision> {
    const seen = await this.normalise(request)
    return this.decideNormalised(ticket, seen)
  }

  /** `decide` for a request already normalised (benchmarks measure this step). */
  decideNormalised(ticket: ReplayTicket, seen: NormalisedRequest): ReplayDecision {
    const seenText = describeSeen(seen, this.#pathsOnly)
    const failure = this.#tally.failure
    if (this.order === 'strict' && failure) {
      this.#tally.row(ticket.request, null, seenText, 'refused: the replay already diverged')
      return this.#refuse(failure.code, `Failed to replay "${seenText}" (request ${ticket.request}): the replay already diverged at request ${failure.request} (${failure.reason}). Later requests are refused; fix the first divergence.`)
    }
    if (this.order === 'strict') return this.#decideStrict(ticket, seen, seenText)
    return this.#decideAny(ticket, seen, seenText)
  }

  #decideStrict(ticket: ReplayTicket, seen: NormalisedRequest, seenText: string): ReplayDecision {
    const position = ticket.position
    if (position !== null && !this.#served[position]) {
      const expected = this.#view(position)
      const difference = describeDifference(expected, seen, this.#match)
      if (difference === null) return this.#serve(ticket.request, position, seenText, false)
      const repeat = this.#repeatFor(seen)
      if (repeat !== null) {
        this.#released.unshift(position)
        return this.#serve(ticket.request, repeat, seenText, true)
      }
      const exchange = this.cassette.exchanges[position] as CassetteExchange
      const diff = this.#closest.of(seen, position)
      const at = diff.position === position + 1 ? summarizeMissDiff(diff) : ''
      const closest = diff.position === position + 1 ? '' : `; the closest recorded is exchange ${diff.position} (${diff.exchange}): ${diff.difference}${summarizeMissDiff(diff) ? ' ' + summarizeMissDiff(diff) : ''}`
      const reason = at ? `${difference} ${at}` : difference
      this.#tally.row(ticket.request, position, seenText, `mismatch: ${reason}`, diff)
      return this.#fail(
        'ERR_CASSETTE_MISMATCH',
        ticket.request,
        reason,
        `Failed to replay "${seenText}" (request ${ticket.request}): it differs from exchange ${position + 1} of ${this.cassette.source} (${describeExchange(exchange)}): ${reason}${closest}. Re-record the cassette, or relax matching (see ${docsUrl('cassettes.md')}).`,
        diff,
      )
    }
    const repeat = this.#repeatFor(seen)
    if (repeat !== null) return this.#serve(ticket.request, repeat, seenText, true)
    this.#tally.row(ticket.request, null, seenText, 'extra')
    return this.#fail(
      'ERR_CASSETTE_EXTRA',
      ticket.request,
      'one request too many',
      `Failed to replay "${seenText}" (request ${ticket.request}): all ${this.#size} recorded exchange(s) of ${this.cassette.source} were already used. Re-record the cassette, or pass --allow-repeats if repeating is expected.`,
    )
  }

  #decideAny(ticket: ReplayTicket, seen: NormalisedRequest, seenText: string): ReplayDecision {
    const found = this.#takeUnused(seen.key, seen) ?? (seen.key !== seen.looseKey ? this.#takeUnused(seen.looseKey, seen) : null)
    if (found !== null) return this.#serve(ticket.request, found, seenText, false)
    const repeat = this.#repeatFor(seen)
    if (repeat !== null) return this.#serve(ticket.request, repeat, seenText, true)
    if (this.#options.passthroughUnmatched) {
      this.#tally.passedThrough++
      this.#tally.row(ticket.request, null, seenText, 'passed through (no recording)')
      return { type: 'passthrough' }
    }
    let remaining = this.#size - this.#tally.served
    if (this.#liveAt) for (let position = 0; position < this.#size; position++) remaining -= this.#liveAt[position] as number
    if (remaining === 0) {
      this.#tally.row(ticket.request, null, seenText, 'extra')
      return this.#fail('ERR_CASSETTE_EXTRA', ticket.request, 'one request too many', `Failed to replay "${seenText}" (request ${ticket.request}): all ${this.#size} recorded exchange(s) of ${this.cassette.source} were already used. Re-record the cassette, or pass --allow-repeats if repeating is expected.`)
    }
    const diff = this.#closest.of(seen, null)
    const closest = `closest: exchange ${diff.position}, ${diff.difference}${summarizeMissDiff(diff) ? ' ' + summarizeMissDiff(diff) : ''}`
    this.#tally.row(ticket.request, null, seenText, `mismatch: no recorded exchange matches (${closest})`, diff)
    return this.#fail(
      'ERR_CASSETTE_MISMATCH',
      ticket.request,
      'no recorded exchange matches',
      `Failed to replay "${seenText}" (request ${ticket.request}): none of the ${remaining} unused exchange(s) of ${this.cassette.source} matches it (method, path, query, body${this.#match.headers.length ? ', headers' : ''}); the closest is exchange ${diff.position} (${diff.exchange}): ${diff.difference}${summarizeMissDiff(diff) ? ' ' + summarizeMissDiff(diff) : ''}. Re-record the cassette, or relax matching (see ${docsUrl('cassettes.md')}).`,
      diff,
    )
  }

  /** The first unused position under `key` whose origin agrees. */
  #takeUnused(key: string, seen: MatchView): number | null {
    const positions = this.#index.get(key)
    if (!positions) return null
    let cursor = this.#cursor.get(key) ?? 0
    while (cursor < positions.length && this.#served[positions[cursor] as number]) cursor++
    this.#cursor.set(key, cursor)
    for (let i = cursor; i < positions.length; i++) {
      const position = positions[i] as number
      if (this.#served[position]) continue
      const expected = this.#view(position)
      if (expected.origin === null || seen.origin === null || expected.origin === seen.origin) return position
    }
    return null
  }

  /** With `allowRepeats`: the last used exchange this request matches. */
  #repeatFor(seen: MatchView): number | null {
    if (!this.#options.allowRepeats) return null
    for (const key of seen.key === seen.looseKey ? [seen.key] : [seen.key, seen.looseKey]) {
      const positions = this.#usedByKey.get(key)
      if (!positions) continue
      for (let i = positions.length - 1; i >= 0; i--) {
        const position = positions[i] as number
        const expected = this.#view(position)
        if (expected.origin === null || seen.origin === null || expected.origin === seen.origin) return position
      }
    }
    return null
  }

  #serve(request: number, position: number, seenText: string, repeat: boolean): ReplayDecision {
    if (!repeat) {
      this.#served[position] = 1
      if (this.#options.allowRepeats) indexPosition(this.#usedByKey, this.#view(position).key, position)
    }
    this.#servedLog.push(position)
    this.#tally.serve(request, position, seenText, repeat)
    return { type: 'serve', exchange: this.cassette.exchanges[position] as CassetteExchange, position, repeat }
  }

  #fail(code: ReplayFailureCode, request: number, reason: string, message: string, diff: MissDiff | null = null): ReplayDecision {
    this.#tally.fail(code, request, reason, message)
    return this.#refuse(code, message, diff)
  }

  #refuse(code: ReplayFailureCode, message: string, diff: MissDiff | null = null): ReplayDecision {
    return { type: 'refuse', error: new CassetteMismatchError(code, message, diff ? { details: formatMissDiff(diff).join('\n') } : undefined), diff }
  }

  /**
   * The answer served to request `request` echoes values the client sent under `names`, but still
   * carries the recorded ones (the live value is ambiguous or was not read): the client may drop
   * it, so the verdict fails.
   */
  noteUnrestoredEchoes(request: number, names: readonly string[]): void {
    this.#tally.noteUnrestoredEchoes(request, names)
  }

  /** The answer chosen for request `request` was withheld (`result`, for its row): the verdict fails with `message`. */
  failServed(request: number, result: string, message: string): void {
    this.#tally.failServed(request, result, message)
  }

  /** The client never answered a server request replayed to request `request` (`result`, for its row): the verdict fails unless `allowUnused`. */
  noteUnanswered(request: number, result: string, message: string): void {
    this.#tally.noteUnanswered(request, result, message)
  }

  /** Positions served so far, in the order they were served (repeats included). */
  get servedPositions(): readonly number[] {
    return this.#servedLog
  }

  /** The verdict so far: unused exchanges count as failures unless `allowUnused`. */
  verdict(): ReplayVerdict {
    return this.#tally.verdict(this.#unused())
  }

  /** Throw the verdict's typed error (with the table in `details`) unless it passed. */
  assertDone(): void {
    this.#tally.assertDone(this.#unused())
  }

  /** The positions never requested (live routes aside). */
  #unused(): number[] {
    const unused: number[] = []
    for (let position = 0; position < this.#size; position++) if (!this.#served[position] && !this.#liveAt?.[position]) unused.push(position)
    return unused
  }
}
