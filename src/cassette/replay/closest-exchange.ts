/**
 * The recorded exchange closest to a request that missed, and how they differ (miss-diff.ts): what
 * a mismatch names in its message, its row and `toolstorm replay --json`. Indexes by route and by
 * method and path are built on the first miss; each miss compares at most DIFF_CANDIDATES bodies.
 */
import type { CassetteExchange, MatchOptions } from '../format/cassette-schema.js'
import type { Cassette } from '../format/cassette.js'
import { comparableBody, describeDifference, type MatchView } from '../format/match-key.js'
import { headerOf } from '../format/store-headers.js'
import { bodyDiff, type MissDiff } from './miss-diff.js'
import { describeExchange } from './replay-labels.js'
import type { NormalisedRequest } from './replay-request.js'

/** Recorded exchanges a miss compares bodies with at most (it never scans the whole cassette per candidate). */
const DIFF_CANDIDATES = 64

/** Add `position` to the positions under `key`. */
export function indexPosition(index: Map<string, number[]>, key: string, position: number): void {
  const list = index.get(key)
  if (list) list.push(position)
  else index.set(key, [position])
}

export class ClosestExchange {
  readonly #cassette: Cassette
  readonly #match: MatchOptions
  /** The match view of a position (the session computes them once). */
  readonly #view: (position: number) => MatchView
  /** Whether a position is still open: neither served nor on a live route. */
  readonly #open: (position: number) => boolean
  /** Positions by route and by method and path, built on the first miss. */
  #byRoute: { route: Map<string, number[]>; path: Map<string, number[]> } | null = null

  constructor(cassette: Cassette, match: MatchOptions, view: (position: number) => MatchView, open: (position: number) => boolean) {
    this.#cassette = cassette
    this.#match = match
    this.#view = view
    this.#open = open
  }

  /**
   * The recorded exchange closest to `seen`, and how they differ: `expected` (the position strict
   * order required) when it has the same route (or method and path), else the closest unused
   * exchange of the same route, else of the same method and path, by body, else the closest of any.
   */
  of(seen: NormalisedRequest, expected: number | null): MissDiff {
    const size = this.#cassette.exchanges.length
    const path = `${seen.method} ${seen.path}`
    const sameRoute = (position: number) => {
      const view = this.#view(position)
      return (seen.route !== undefined && (this.#cassette.exchanges[position] as CassetteExchange).route === seen.route) || `${view.method} ${view.path}` === path
    }
    let candidates: number[]
    let closeness: MissDiff['closeness'] = 'same route'
    if (expected !== null && sameRoute(expected)) candidates = [expected]
    else {
      if (this.#byRoute === null) {
        this.#byRoute = { route: new Map(), path: new Map() }
        for (let position = 0; position < size; position++) {
          const view = this.#view(position)
          indexPosition(this.#byRoute.route, (this.#cassette.exchanges[position] as CassetteExchange).route, position)
          indexPosition(this.#byRoute.path, `${view.method} ${view.path}`, position)
        }
      }
      candidates = seen.route === undefined ? [] : this.#unusedOf(this.#byRoute.route.get(seen.route) ?? [])
      if (candidates.length === 0) candidates = this.#unusedOf(this.#byRoute.path.get(path) ?? [])
      if (candidates.length === 0) {
        closeness = 'other route'
        candidates = expected !== null ? [expected] : this.#unusedOf(Array.from({ length: size }, (_, position) => position))
        // Every exchange used (and no repeat matched): the last one recorded stands in.
        if (candidates.length === 0) candidates = [size - 1]
      }
    }
    const seenJson = seen.body === undefined ? undefined : comparableBody(seen.body, seen.contentType, this.#match.normalize, this.#match)
    let best: { position: number; score: number; diff: ReturnType<typeof bodyDiff> } | null = null
    for (const position of candidates) {
      const request = (this.#cassette.exchanges[position] as CassetteExchange).request
      const view = this.#view(position)
      let diff: ReturnType<typeof bodyDiff>
      if (seen.body === undefined || request.bodyUnknown) diff = { paths: [], morePaths: 0, bytes: null, score: 0 }
      else {
        const recordedJson = comparableBody(request.body, headerOf(request.headers, 'content-type'), this.#match.normalize, this.#match)
        const json = recordedJson !== undefined && seenJson !== undefined ? { expected: recordedJson, seen: seenJson } : null
        diff = bodyDiff(request.body, seen.body, json, this.#match.ignoreBodyFields)
      }
      const score = diff.score + (view.query === seen.query ? 0 : 1) + (view.method === seen.method ? 0 : 1)
      if (best === null || score < best.score) best = { position, score, diff }
      if (score === 0) break
    }
    const { position, diff } = best as NonNullable<typeof best>
    const exchange = this.#cassette.exchanges[position] as CassetteExchange
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

  /** The open positions among `positions`, at most DIFF_CANDIDATES. */
  #unusedOf(positions: readonly number[]): number[] {
    const out: number[] = []
    for (const position of positions) {
      if (out.length >= DIFF_CANDIDATES) break
      if (this.#open(position)) out.push(position)
    }
    return out
  }
}
