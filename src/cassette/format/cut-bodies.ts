/**
 * Bodies a recording cut at the body limit, counted per route, so that recording is never silent
 * about them: `record`, `proxy --record` and replicas recording through `--state` say at stop how
 * many were cut, on which routes, and the `--body-limit` that keeps them whole.
 *
 * @example
 * const tally = new CutBodyTally()
 * for (const exchange of cassette.exchanges) tally.add(exchange)
 * describeCutBodies(tally.summary(), cassette.header.bodyLimit)
 */
import { MAX_BODY_LIMIT, type CassetteExchange, type StoredBody } from './cassette-schema.js'

/** Cut bodies of one route. */
export interface CutRoute {
  readonly route: string
  readonly requests: number
  /** Responses the client received. */
  readonly responses: number
  /** The upstream's own answers kept as evidence (a lost response, schema drift). */
  readonly upstream: number
}

export interface CutBodies {
  /** Bodies cut, in every route. */
  readonly count: number
  /** Routes in the order their first cut body was recorded. */
  readonly routes: readonly CutRoute[]
  /** The largest size on the wire of a cut body (bytes). */
  readonly largest: number
  /** Whether a cut body was stored decoded (gzip, deflate, br): its decoded length is larger than its size on the wire. */
  readonly decoded: boolean
}

/** Routes a message lists by name; the rest are counted. */
const LISTED_ROUTES = 10

export class CutBodyTally {
  readonly #routes = new Map<string, { requests: number; responses: number; upstream: number }>()
  #count = 0
  #largest = 0
  #decoded = false

  /** Count the cut bodies of one exchange. */
  add(exchange: CassetteExchange): void {
    this.#body(exchange.route, exchange.request.body, 'requests')
    this.#body(exchange.route, exchange.response?.body ?? null, 'responses')
    this.#body(exchange.route, exchange.upstream?.body ?? null, 'upstream')
  }

  #body(route: string, body: StoredBody | null, kind: 'requests' | 'responses' | 'upstream'): void {
    if (!body?.truncated) return
    let counts = this.#routes.get(route)
    if (!counts) this.#routes.set(route, (counts = { requests: 0, responses: 0, upstream: 0 }))
    counts[kind]++
    this.#count++
    this.#largest = Math.max(this.#largest, body.size)
    if (body.decoded) this.#decoded = true
  }

  summary(): CutBodies {
    return { count: this.#count, routes: [...this.#routes].map(([route, counts]) => ({ route, ...counts })), largest: this.#largest, decoded: this.#decoded }
  }
}

/** The cut bodies of a whole cassette. */
export function cutBodiesOf(exchanges: readonly CassetteExchange[]): CutBodies {
  const tally = new CutBodyTally()
  for (const exchange of exchanges) tally.add(exchange)
  return tally.summary()
}

function plural(count: number, one: string, many = `${one}s`): string {
  return `${count} ${count === 1 ? one : many}`
}

function describeRoute({ route, requests, responses, upstream }: CutRoute): string {
  const kinds = [requests ? plural(requests, 'request') : '', responses ? plural(responses, 'response') : '', upstream ? plural(upstream, 'upstream response') : ''].filter(Boolean)
  return `${route} (${kinds.join(', ')})`
}

/**
 * What a recording says at stop about its cut bodies (null when none was cut).
 * @example
 * describeCutBodies(summary, 1_000_000)
 * // '2 bodies were cut at the body limit (1000000 bytes): GET /two (1 response), GET /three (1 response). Replay breaks them off and fails unless --allow-truncated; record with --body-limit 3000000 to keep them whole.'
 */
export function describeCutBodies(cut: CutBodies, limit: number, options: { action?: 'record' | 'import'; cause?: string } = {}): string | null {
  if (cut.count === 0) return null
  const listed = cut.routes.slice(0, LISTED_ROUTES).map(describeRoute).join(', ')
  const more = cut.routes.length > LISTED_ROUTES ? ` and ${plural(cut.routes.length - LISTED_ROUTES, 'more route')}` : ''
  const keep =
    cut.largest > MAX_BODY_LIMIT
      ? `bodies over ${MAX_BODY_LIMIT} bytes (the largest --body-limit) cannot be kept whole: the largest was ${cut.largest}`
      : `${options.action ?? 'record'} with --body-limit ${Math.max(cut.largest, limit + 1)}${cut.decoded ? ' or more (compressed bodies are stored decoded, so larger than on the wire)' : ''} to keep them whole`
  return `${cut.count === 1 ? '1 body was' : `${cut.count} bodies were`} ${options.cause ?? 'cut at the body limit'} (${limit} bytes): ${listed}${more}. Replay breaks them off and fails unless --allow-truncated; ${keep}.`
}
