/**
 * A cassette as MSW request handlers, for suites that already use `setupServer`: each request
 * is answered from the cassette with the same strict matching as the replay server.
 *
 * @example
 * const replay = cassetteHandlers(await Cassette.load('incident.cassette.jsonl'))
 * const server = setupServer(...replay.handlers)
 * server.listen({ onUnhandledRequest: 'error' })
 * // … run the agent …
 * replay.assertDone()
 *
 * msw is an optional peer dependency (2.12 or later, or 3.x), loaded when this is first called.
 *
 * @note A recorded reset is MSW's network error (`HttpResponse.error()`, so fetch rejects with
 * `TypeError: Failed to fetch`), the MSW convention. `replayCassette()` produces the exact error a
 * real reset gives.
 */
import type { RequestHandler } from 'msw'
import { loadMsw } from '../interceptors/load-msw.js'
import type { Cassette } from './cassette.js'
import { answerFor, type CassetteReplayOptions } from './replay-cassette.js'
import { replayReport, type ReplayReport } from './replay-report.js'
import { ReplaySession, type ReplayVerdict } from './replay-session.js'

export interface CassetteHandlers {
  readonly handlers: RequestHandler[]
  readonly session: ReplaySession
  verdict(): ReplayVerdict
  report(): ReplayReport
  /** Throw the typed error of a failed verdict (its `details` hold the table of expected vs seen). */
  assertDone(): void
}

export function cassetteHandlers(cassette: Cassette, options: CassetteReplayOptions = {}): CassetteHandlers {
  const { http, HttpResponse, passthrough } = loadMsw('cassette handlers (cassetteHandlers)')
  const session = new ReplaySession(cassette, options)
  const handler = http.all('*', async ({ request }) => {
    if (options.filter && !options.filter(new URL(request.url), request.method)) return undefined
    const ticket = session.begin()
    const body = request.body ? Buffer.from(await request.clone().arrayBuffer()) : null
    const headers: Record<string, string> = {}
    request.headers.forEach((value, name) => {
      headers[name] = value
    })
    const answer = await answerFor(await session.decide(ticket, { method: request.method, url: request.url, headers, body }), request, session.speed)
    if (answer === null) return passthrough()
    return answer instanceof Error ? HttpResponse.error() : answer
  })
  return {
    handlers: [handler],
    session,
    verdict: () => session.verdict(),
    report: () => replayReport(session, 'in-process'),
    assertDone: () => session.assertDone(),
  }
}
