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
import { stormHandlers } from '../../interceptors/msw-handlers.js'
import type { Cassette } from '../format/cassette.js'
import { inProcessSource, replayStorm } from './replay-cassette.js'
import { checkOptions } from '../../options/check-options.js'
import { cassetteReplayOptionsSchema, type CassetteReplayOptions } from './replay-options.js'
import { replayReport, type ReplayReport } from './replay-report.js'
import type { ReplaySession } from './replay-session.js'
import type { ReplayVerdict } from './replay-verdict.js'

export interface CassetteHandlers {
  readonly handlers: RequestHandler[]
  readonly session: ReplaySession
  verdict(): ReplayVerdict
  report(): ReplayReport
  /** Throw the typed error of a failed verdict (its `details` hold the table of expected vs seen). */
  assertDone(): void
}

/** `stormHandlers` with a cassette source: MSW answers from the cassette. */
export function cassetteHandlers(cassette: Cassette, options: CassetteReplayOptions = {}): CassetteHandlers {
  checkOptions('cassetteHandlers()', cassetteReplayOptionsSchema, options)
  const storm = replayStorm(cassette, options)
  const source = inProcessSource(cassette, options, storm)
  const session = source.session
  const handlers = stormHandlers(storm, { source, ...(options.filter ? { filter: options.filter } : {}) })
  return {
    handlers,
    session,
    verdict: () => session.verdict(),
    report: () => replayReport(session, 'in-process'),
    assertDone: () => session.assertDone(),
  }
}
