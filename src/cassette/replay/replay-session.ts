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
 * their normalised, redacted method, path, query, body and chosen headers.
 */
import { CassetteError, CassetteMismatchError, CassetteTruncatedError, CassetteUnusedError } from '../../errors.js'
import type { HeaderMap } from '../../engine/http.js'
import { createRedactor, type Redactor } from '../../redact/index.js'
import type { CassetteExchange, MatchOptions, StoredBody } from '../format/cassette-schema.js'
import { BodyCapture, captureBytes } from '../format/body-capture.js'
import type { Cassette } from '../format/cassette.js'
import { comparableBody, describeDifference, matchView, splitUrl, type MatchView } from '../format/match-key.js'
import { globMatches } from '../../engine/glob.js'
import { bodyDiff, formatMissDiff, summarizeMissDiff, type MissDiff } from './miss-diff.js'
import { checkReplaySpeed, type ReplaySpeed } from './replay-stream.js'
import { storeBody } from '../format/store-body.js'
import { headerOf, storeHeaders } from '../format/store-headers.js'
import { docsUrl } from '../../docs-url.js'

export type ReplayOrder = 'strict' | 'any'

export interface ReplayOptions {
  /** `strict` (default): recorded order. `any`: the first unused matching exchange. */
  order?: ReplayOrder
  /** Replay an already used exchange again for a repeated request. */
  allowRepeats?: boolean
  /** Do not fail when recorded exchanges were never requested. */
  allowUnused?: boolean
  /**
   * Do not fail when a served response's body was cut at the body limit when it was recorded.
   * Its replay still breaks off after the stored prefix (the client sees an error either way).
   */
  allowTruncated?: boolean
  /** Requests that match nothing are not failures; the caller forwards them (forces `order: 'any'`). */
  passthroughUnmatched?: boolean
  /** Matching options; default: those in the cassette header. */
  match?: Partial<MatchOptions>
  /**
   * Route globs (as in rules: a route name or `METHOD /path`) that go to the network instead of
   * the cassette; their recorded exchanges are left out of the replay and of its verdict.
   */
  live?: readonly string[]
  /** Route globs that replay; every other route goes to the network (the inverse of `live`). */
  replayOnly?: readonly string[]
  /**
   * Normalises live requests; must redact as the recording did. Default: the default redactor
   * plus the secret names in the cassette header (literal secrets must be passed again).
   */
  redactor?: Redactor
  /**
   * How a response recorded as an event stream is played: `instant` (default) sends its events
   * at once, in order; `recorded` sends each one as long after the head as it arrived when it was
   * recorded (the time to the head is not replayed). Cuts, dropped final events and stalls replay
   * at the same point either way.
   */
  speed?: ReplaySpeed
}

/** A live request to match. `url` is origin-form or absolute. */
export interface LiveRequest {
  readonly method: string
  readonly url: string
  readonly headers: HeaderMap
  /** The body bytes, or a capture of them made while they streamed in. */
  readonly body: Uint8Array | BodyCapture | null
  /** The route the proxy named it by (a miss looks for the closest exchange of the same route first). */
  readonly route?: string
}

/** A live request as replay compares it: redacted, bounded, its match view computed. */
export type NormalisedRequest = MatchView & {
  readonly url: string
  /** The stored (redacted) body; absent when only the match view was kept (then a miss has no body diff). */
  readonly body?: StoredBody | null
  readonly contentType?: string | undefined
  readonly route?: string | undefined
}

export type ReplayDecision =
  | { readonly type: 'serve'; readonly exchange: CassetteExchange; readonly position: number; readonly repeat: boolean }
  | { readonly type: 'passthrough' }
  | { readonly type: 'refuse'; readonly error: CassetteError; readonly diff: MissDiff | null }

/** One row of the table of expected vs seen. */
export interface ReplayRow {
  /** The request's number in arrival order (null for an unused exchange). */
  readonly request: number | null
  /** The recorded exchange's position (null for an extra request). */
  readonly position: number | null
  readonly expected: string | null
  readonly seen: string | null
  readonly result: string
  /** A miss: the closest recorded exchange and what differs from it. */
  readonly diff?: MissDiff
}

export interface ReplayVerdict {
  readonly passed: boolean
  readonly code: 'ERR_CASSETTE_MISMATCH' | 'ERR_CASSETTE_EXTRA' | 'ERR_CASSETTE_TRUNCATED' | 'ERR_CASSETTE_UNUSED' | null
  readonly message: string
  readonly expected: number
  readonly served: number
  readonly repeats: number
  readonly passedThrough: number
  /** Requests on live routes (`live`, `replayOnly`): sent to the network, outside the verdict. */
  readonly live: number
  readonly unused: number
  /** Served responses whose body was cut at the body limit when recorded (repeats included). */
  readonly truncated: number
  readonly rows: readonly ReplayRow[]
}

/** A request's claim on a position, taken when its head arrives. */
export interface ReplayTicket {
  readonly request: number
  readonly position: number | null
}

const TABLE_ROWS = 40
/** Recorded exchanges a miss compares bodies with at most (it never scans the whole cassette per candidate). */
const DIFF_CANDIDATES = 64

function describe(method: string, url: string): string {
  return `${method} ${url}`
}

/** How a served exchange's response falls short of what was recorded (`truncated: …`), or null when it is whole. */
function truncation(exchange: CassetteExchange): string | null {
  const body = exchange.response?.body
  if (!body?.truncated) return null
  const stored = Buffer.byteLength(body.data, body.encoding)
  return body.decoded ? `truncated: ${stored} bytes recorded (decoded) of a ${body.size}-byte ${body.decoded} body` : `truncated: ${stored} of ${body.size} bytes recorded`
}

/**
 * A request as the table and messages show it: an MCP call (or any route not named by method and
 * path) by its route first, as the cassette names it (`tools/call create_shipment · POST /mcp`);
 * a path when the cassette stores paths.
 */
function describeSeen(seen: NormalisedRequest, pathsOnly: boolean): string {
  const request = describe(seen.method, pathsOnly ? originForm(seen.url) : seen.url)
  return seen.route === undefined || seen.route.startsWith(`${seen.method} `) ? request : `${seen.route} · ${request}`
}

/** `/path?query` of an absolute URL; an origin-form one as it is. */
function originForm(url: string): string {
  if (url.startsWith('/')) return url
  try {
    const parsed = new URL(url)
    return parsed.pathname + parsed.search
  } catch {
    return url
  }
}

/** An exchange as the table shows it: its route when that says more than `METHOD url`. */
function describeExchange(exchange: CassetteExchange): string {
  const request = describe(exchange.request.method, exchange.request.url)
  return exchange.route === request || request.startsWith(exchange.route + '?') ? request : `${exchange.route} · ${request}`
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
  /** Positions by key, for `order: 'any'` (built at construction) … */
  readonly #index = new Map<string, number[]>()
  /** … and used positions by key, for repeats (grows as exchanges are served). */
  readonly #usedByKey = new Map<string, number[]>()
  readonly #size: number
  /** Per key: how many of its positions are used up (for `order: 'any'`). */
  readonly #cursor = new Map<string, number>()
  readonly #served: Uint8Array
  readonly #released: number[] = []
  /** One row per request; `expected` is filled in from `position` when the verdict is read. */
  readonly #rows: Array<{ request: number; position: number | null; seen: string; result: string; diff?: MissDiff }> = []
  /** Positions by route and by method and path, built on the first miss (to find the closest exchange). */
  #byRoute: { route: Map<string, number[]>; path: Map<string, number[]> } | null = null
  readonly #servedLog: number[] = []
  #next = 0
  #requests = 0
  #repeats = 0
  #passedThrough = 0
  #live = 0
  /** Recorded exchanges on live routes: never replayed, never unused (null: none). */
  readonly #liveAt: Uint8Array | null
  #servedCount = 0
  /** The first served response whose body was cut when recorded, and how many were served. */
  #truncated: { count: number; request: number; position: number; result: string } | null = null
  #failure: { code: 'ERR_CASSETTE_MISMATCH' | 'ERR_CASSETTE_EXTRA'; message: string; request: number; reason: string } | null = null
  /** The first served answer that echoes a value the live request sent, but could not be given it (echoed-values.ts), and how many. */
  #unrestored: { count: number; request: number; position: number | null; names: readonly string[] } | null = null

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
    }
    this.#redactor = options.redactor ?? createRedactor({ keys: cassette.header.redaction.keys })
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
    if (this.order === 'any') for (let position = 0; position < this.#size; position++) if (!this.#liveAt?.[position]) this.#indexed(this.#index, this.#view(position).key, position)
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
    this.#live++
    this.#row(request, null, seen, 'live (sent to the network)')
  }

  #view(position: number): MatchView {
    let view = this.#views[position]
    if (view === undefined) this.#views[position] = view = matchView((this.cassette.exchanges[position] as CassetteExchange).request, this.#match)
    return view
  }

  #indexed(index: Map<string, number[]>, key: string, position: number): void {
    const list = index.get(key)
    if (list) list.push(position)
    else index.set(key, [position])
  }

  get matchOptions(): MatchOptions {
    return this.#match
  }

  /** Whether the verdict already failed. */
  get failed(): boolean {
    return this.#failure !== null
  }

  /** Claim a position for a request whose head just arrived (call synchronously, in arrival order). */
  begin(): ReplayTicket {
    const request = ++this.#requests
    if (this.order !== 'strict' || this.#failure) return { request, position: null }
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
  async normalise(request: LiveRequest): Promise<NormalisedRequest> {
    const { redactor } = this
    const limit = this.cassette.header.bodyLimit
    const headers = storeHeaders(request.headers, redactor)
    const capture = request.body instanceof BodyCapture ? request.body : captureBytes(request.body, limit)
    const body = await storeBody(capture, { contentType: headerOf(request.headers, 'content-type'), contentEncoding: headerOf(request.headers, 'content-encoding'), limit, redactor })
    const url = redactor.url(request.url)
    return { ...matchView({ method: request.method, url, headers, body }, this.#match), url, body, contentType: headerOf(headers, 'content-type'), route: request.route }
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
    if (this.order === 'strict' && this.#failure) {
      const failure = this.#failure
      this.#row(ticket.request, null, seenText, 'refused: the replay already diverged')
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
      const diff = this.#missDiff(seen, position)
      const at = diff.position === position + 1 ? summarizeMissDiff(diff) : ''
      const closest = diff.position === position + 1 ? '' : `; the closest recorded is exchange ${diff.position} (${diff.exchange}): ${diff.difference}${summarizeMissDiff(diff) ? ' ' + summarizeMissDiff(diff) : ''}`
      const reason = at ? `${difference} ${at}` : difference
      this.#row(ticket.request, position, seenText, `mismatch: ${reason}`, diff)
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
    this.#row(ticket.request, null, seenText, 'extra')
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
      this.#passedThrough++
      this.#row(ticket.request, null, seenText, 'passed through (no recording)')
      return { type: 'passthrough' }
    }
    let remaining = this.#size - this.#servedCount
    if (this.#liveAt) for (let position = 0; position < this.#size; position++) remaining -= this.#liveAt[position] as number
    if (remaining === 0) {
      this.#row(ticket.request, null, seenText, 'extra')
      return this.#fail('ERR_CASSETTE_EXTRA', ticket.request, 'one request too many', `Failed to replay "${seenText}" (request ${ticket.request}): all ${this.#size} recorded exchange(s) of ${this.cassette.source} were already used. Re-record the cassette, or pass --allow-repeats if repeating is expected.`)
    }
    const diff = this.#missDiff(seen, null)
    const closest = `closest: exchange ${diff.position}, ${diff.difference}${summarizeMissDiff(diff) ? ' ' + summarizeMissDiff(diff) : ''}`
    this.#row(ticket.request, null, seenText, `mismatch: no recorded exchange matches (${closest})`, diff)
    return this.#fail(
      'ERR_CASSETTE_MISMATCH',
      ticket.request,
      'no recorded exchange matches',
      `Failed to replay "${seenText}" (request ${ticket.request}): none of the ${remaining} unused exchange(s) of ${this.cassette.source} matches it (method, path, query, body${this.#match.headers.length ? ', headers' : ''}); the closest is exchange ${diff.position} (${diff.exchange}): ${diff.difference}${summarizeMissDiff(diff) ? ' ' + summarizeMissDiff(diff) : ''}. Re-record the cassette, or relax matching (see ${docsUrl('cassettes.md')}).`,
      diff,
    )
  }

  /**
   * The recorded exchange closest to a request that missed, and how they differ: `expected` (the
   * position strict order required) when it has the same route (or method and path), else the
   * closest unused exchange of the same route, else of the same method and path, by body, else
   * the closest of any (at most DIFF_CANDIDATES bodies compared each time).
   */
  #missDiff(seen: NormalisedRequest, expected: number | null): MissDiff {
    const path = `${seen.method} ${seen.path}`
    const sameRoute = (position: number) => {
      const view = this.#view(position)
      return (seen.route !== undefined && (this.cassette.exchanges[position] as CassetteExchange).route === seen.route) || `${view.method} ${view.path}` === path
    }
    let candidates: number[]
    let closeness: MissDiff['closeness'] = 'same route'
    if (expected !== null && sameRoute(expected)) candidates = [expected]
    else {
      if (this.#byRoute === null) {
        this.#byRoute = { route: new Map(), path: new Map() }
        for (let position = 0; position < this.#size; position++) {
          const view = this.#view(position)
          this.#indexed(this.#byRoute.route, (this.cassette.exchanges[position] as CassetteExchange).route, position)
          this.#indexed(this.#byRoute.path, `${view.method} ${view.path}`, position)
        }
      }
      candidates = seen.route === undefined ? [] : this.#unusedOf(this.#byRoute.route.get(seen.route) ?? [])
      if (candidates.length === 0) candidates = this.#unusedOf(this.#byRoute.path.get(path) ?? [])
      if (candidates.length === 0) {
        closeness = 'other route'
        candidates = expected !== null ? [expected] : this.#unusedOf(Array.from({ length: this.#size }, (_, position) => position))
        // Every exchange used (and no repeat matched): the last one recorded stands in.
        if (candidates.length === 0) candidates = [this.#size - 1]
      }
    }
    const seenJson = seen.body === undefined ? undefined : comparableBody(seen.body, seen.contentType, this.#match.normalize)
    let best: { position: number; score: number; diff: ReturnType<typeof bodyDiff> } | null = null
    for (const position of candidates) {
      const request = (this.cassette.exchanges[position] as CassetteExchange).request
      const view = this.#view(position)
      let diff: ReturnType<typeof bodyDiff>
      if (seen.body === undefined || request.bodyUnknown) diff = { paths: [], morePaths: 0, bytes: null, score: 0 }
      else {
        const recordedJson = comparableBody(request.body, headerOf(request.headers, 'content-type'), this.#match.normalize)
        const json = recordedJson !== undefined && seenJson !== undefined ? { expected: recordedJson, seen: seenJson } : null
        diff = bodyDiff(request.body, seen.body, json, this.#match.ignoreBodyFields)
      }
      const score = diff.score + (view.query === seen.query ? 0 : 1) + (view.method === seen.method ? 0 : 1)
      if (best === null || score < best.score) best = { position, score, diff }
      if (score === 0) break
    }
    const { position, diff } = best as NonNullable<typeof best>
    const exchange = this.cassette.exchanges[position] as CassetteExchange
    return {
      position: position + 1,
      exchange: describeExchange(exchange),
      closeness,
      difference: describeDifference(this.#view(position), seen, this.#match) ?? 'it matches this one, recorded at another position (strict order)',
      paths: diff.paths,
      morePaths: diff.morePaths,
      bytes: diff.bytes,
    }
  }

  /** The unused positions among `positions`, at most DIFF_CANDIDATES. */
  #unusedOf(positions: readonly number[]): number[] {
    const out: number[] = []
    for (const position of positions) {
      if (out.length >= DIFF_CANDIDATES) break
      if (!this.#served[position] && !this.#liveAt?.[position]) out.push(position)
    }
    return out
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
    const exchange = this.cassette.exchanges[position] as CassetteExchange
    if (repeat) this.#repeats++
    else {
      this.#served[position] = 1
      this.#servedCount++
      if (this.#options.allowRepeats) this.#indexed(this.#usedByKey, this.#view(position).key, position)
    }
    this.#servedLog.push(position)
    const cut = truncation(exchange)
    if (cut === null) this.#row(request, position, seenText, repeat ? 'ok (repeat)' : 'ok')
    else {
      const result = this.#options.allowTruncated ? `ok (${cut}, allowed)` : cut
      this.#row(request, position, seenText, result)
      if (this.#truncated) this.#truncated.count++
      else this.#truncated = { count: 1, request, position, result: cut }
    }
    return { type: 'serve', exchange, position, repeat }
  }

  #fail(code: 'ERR_CASSETTE_MISMATCH' | 'ERR_CASSETTE_EXTRA', request: number, reason: string, message: string, diff: MissDiff | null = null): ReplayDecision {
    this.#failure ??= { code, message, request, reason }
    return this.#refuse(code, message, diff)
  }

  #refuse(code: 'ERR_CASSETTE_MISMATCH' | 'ERR_CASSETTE_EXTRA', message: string, diff: MissDiff | null = null): ReplayDecision {
    return { type: 'refuse', error: new CassetteMismatchError(code, message, diff ? { details: formatMissDiff(diff).join('\n') } : undefined), diff }
  }

  #row(request: number, position: number | null, seen: string, result: string, diff?: MissDiff): void {
    this.#rows.push(diff ? { request, position, seen, result, diff } : { request, position, seen, result })
  }

  /**
   * The answer served to request `request` echoes values the client sent under `names`, but still
   * carries the recorded ones (the live value is ambiguous or was not read): the client may drop
   * it, so the verdict fails.
   */
  noteUnrestoredEchoes(request: number, names: readonly string[]): void {
    const row = this.#rows.findLast((candidate) => candidate.request === request)
    if (row) row.result = `echo not restored: ${names.join(', ')} (the client got the recorded value)`
    if (this.#unrestored) this.#unrestored.count++
    else this.#unrestored = { count: 1, request, position: row?.position ?? null, names }
  }

  /** Positions served so far, in the order they were served (repeats included). */
  get servedPositions(): readonly number[] {
    return this.#servedLog
  }

  /** The verdict so far: unused exchanges count as failures unless `allowUnused`. */
  verdict(): ReplayVerdict {
    const unusedRows: ReplayRow[] = []
    for (let position = 0; position < this.#size; position++) {
      if (this.#served[position] || this.#liveAt?.[position]) continue
      const exchange = this.cassette.exchanges[position] as CassetteExchange
      unusedRows.push({ request: null, position: position + 1, expected: describeExchange(exchange), seen: null, result: 'unused' })
    }
    const rows: ReplayRow[] = this.#rows.map(({ request, position, seen, result, diff }) => ({
      request,
      position: position === null ? null : position + 1,
      expected: position === null ? null : describeExchange(this.cassette.exchanges[position] as CassetteExchange),
      seen,
      result,
      ...(diff ? { diff } : {}),
    }))
    rows.push(...unusedRows)
    const truncated = this.#truncated
    const base = {
      expected: this.#size,
      served: this.#servedCount,
      repeats: this.#repeats,
      passedThrough: this.#passedThrough,
      live: this.#live,
      unused: unusedRows.length,
      truncated: truncated?.count ?? 0,
      rows,
    }
    if (this.#failure) return { ...base, passed: false, code: this.#failure.code, message: this.#failure.message }
    const unrestored = this.#unrestored
    if (unrestored) {
      const at = unrestored.position === null ? '' : `, exchange ${unrestored.position + 1} (${describeExchange(this.cassette.exchanges[unrestored.position] as CassetteExchange)})`
      return {
        ...base,
        passed: false,
        code: 'ERR_CASSETTE_MISMATCH',
        message: `Failed to replay ${this.cassette.source} faithfully: ${unrestored.count} served response(s) echo a value the client sent, but replay could not give it back (first: request ${unrestored.request}${at}: ${unrestored.names.join(', ')}), so the client got the recorded value and may drop the answer (an MCP client drops progress for a token that is not its own). The live request held several values under that name, or its body was past the body limit.`,
      }
    }
    if (truncated && !this.#options.allowTruncated) {
      const exchange = this.cassette.exchanges[truncated.position] as CassetteExchange
      return {
        ...base,
        passed: false,
        code: 'ERR_CASSETTE_TRUNCATED',
        message: `Failed to replay ${this.cassette.source} faithfully: ${truncated.count} served response(s) had a body cut at the body limit (${this.cassette.header.bodyLimit} bytes) when recorded, so the client got the stored prefix and then a broken connection (first: request ${truncated.request}, exchange ${truncated.position + 1}, ${describeExchange(exchange)}: ${truncated.result}). Record again with a larger --body-limit, or pass --allow-truncated.`,
      }
    }
    if (unusedRows.length && !this.#options.allowUnused) {
      const first = unusedRows[0] as ReplayRow
      return {
        ...base,
        passed: false,
        code: 'ERR_CASSETTE_UNUSED',
        message: `Failed to finish the replay of ${this.cassette.source}: ${unusedRows.length} recorded exchange(s) were never requested (first: exchange ${first.position}, ${first.expected}). Re-record the cassette, or pass --allow-unused.`,
      }
    }
    return { ...base, passed: true, code: null, message: `Replayed ${this.#servedCount} of ${this.#size} exchange(s) from ${this.cassette.source}${this.#repeats ? `, ${this.#repeats} repeat(s)` : ''}${this.#passedThrough ? `, ${this.#passedThrough} passed through` : ''}${this.#live ? `, ${this.#live} live` : ''}.` }
  }

  /** Throw the verdict's typed error (with the table in `details`) unless it passed. */
  assertDone(): void {
    const verdict = this.verdict()
    if (verdict.passed) return
    const details = formatReplayTable(verdict.rows)
    if (verdict.code === 'ERR_CASSETTE_UNUSED') throw new CassetteUnusedError(verdict.message, { details })
    if (verdict.code === 'ERR_CASSETTE_TRUNCATED') throw new CassetteTruncatedError(verdict.message, { details })
    throw new CassetteMismatchError(verdict.code as 'ERR_CASSETTE_MISMATCH' | 'ERR_CASSETTE_EXTRA', verdict.message, { details })
  }
}

/**
 * The table of expected vs seen, failures first in context. At most `limit` rows; the rest are counted.
 * @example
 * formatReplayTable(session.verdict().rows)
 * //  req  #  expected                         seen              result
 * //    1  1  GET /items/:id · GET /items/a    GET /items/a      ok
 */
export function formatReplayTable(rows: readonly ReplayRow[], limit = TABLE_ROWS): string {
  const failing = rows.map((row, index) => (row.result.startsWith('ok') || row.result.startsWith('passed') ? -1 : index)).filter((index) => index >= 0)
  // Show every failure with one row of context before it, then fill up with the first rows.
  const shown = new Set<number>()
  for (const index of failing) {
    if (shown.size >= limit) break
    if (index > 0) shown.add(index - 1)
    shown.add(index)
  }
  for (let index = 0; index < rows.length && shown.size < limit; index++) shown.add(index)
  const picked = [...shown].sort((a, b) => a - b)
  const cells = picked.map((index) => {
    const row = rows[index] as ReplayRow
    return [row.request === null ? '-' : String(row.request), row.position === null ? '-' : String(row.position), clip(row.expected ?? '—'), clip(row.seen ?? '—'), row.result]
  })
  const header = ['req', '#', 'expected', 'seen', 'result']
  const widths = header.map((title, column) => Math.max(title.length, ...cells.map((cell) => (cell[column] as string).length)))
  const line = (cell: string[]) => cell.map((text, column) => (column < 2 ? text.padStart(widths[column] as number) : text.padEnd(widths[column] as number))).join('  ').trimEnd()
  const out = [line(header)]
  // A miss's diff follows its row, indented under `expected`.
  const indent = ' '.repeat((widths[0] as number) + (widths[1] as number) + 4)
  picked.forEach((index, at) => {
    out.push(line(cells[at] as string[]))
    const diff = (rows[index] as ReplayRow).diff
    if (diff) for (const text of formatMissDiff(diff)) out.push(indent + text)
  })
  if (rows.length > picked.length) out.push(`… ${rows.length - picked.length} more row(s)`)
  return out.join('\n')
}

function clip(text: string, width = 60): string {
  return text.length <= width ? text : text.slice(0, width - 1) + '…'
}
