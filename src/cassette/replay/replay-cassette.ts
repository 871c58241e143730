/**
 * In-process replay: this process's `fetch` and `node:http` requests are answered from a
 * cassette, with no network: `intercept()` with a cassette source (`replay-source.ts`), so it
 * plays recorded endings exactly as the replay server does, with the same code. A recorded reset rejects `fetch` exactly as a real one does
 * (`TypeError: fetch failed`, cause `ECONNRESET`); a mismatch is answered `422` (REPLAY_REFUSAL_STATUS) with a JSON error
 * that names it, and the verdict fails.
 *
 * @example
 * const replay = replayCassette(await Cassette.load('incident.cassette.jsonl'))
 * await agent.run()
 * replay.dispose()
 * replay.assertDone() // throws CassetteMismatchError / CassetteUnusedError with the table
 *
 * @note Use it instead of `intercept()`, not with it: both patch the same globals.
 */
import { createStorm } from '../../create-storm.js'
import type { Storm } from '../../engine/storm.js'
import { createRedactor } from '../../redact/index.js'
import { intercept } from '../../interceptors/intercept.js'
import type { Cassette } from '../format/cassette.js'
import { replayReport, type ReplayReport } from './replay-report.js'
import type { ReplaySession } from './replay-session.js'
import type { ReplayVerdict } from './replay-verdict.js'
import { replaySource, type ReplaySource } from './replay-source.js'
import { checkOptions } from '../../options/check-options.js'
import { cassetteReplayOptionsSchema, type CassetteReplayOptions } from './replay-options.js'


export type CassetteReplayState = 'active' | 'disposed'

export interface CassetteReplay {
  readonly session: ReplaySession
  readonly readyState: CassetteReplayState
  verdict(): ReplayVerdict
  report(): ReplayReport
  /** Throw the typed error of a failed verdict (its `details` hold the table of expected vs seen). */
  assertDone(): void
  dispose(): void
  [Symbol.dispose](): void
}

/** The cassette source for in-process replay (`replayCassette`, `cassetteHandlers`). */
export function inProcessSource(cassette: Cassette, options: CassetteReplayOptions, storm: Storm): ReplaySource {
  const { filter: _filter, passthroughUnmatched, storm: _storm, ...replay } = options
  // Live requests are normalised as recorded: the cassette's secret names plus the storm's.
  const { keys, secrets } = storm.config.redact
  const redactor = replay.redactor ?? createRedactor({ keys: [...cassette.header.redaction.keys, ...keys], secrets })
  return replaySource(cassette, { ...replay, redactor, mode: passthroughUnmatched ? 'passthrough-unmatched' : 'replay' })
}

/** The storm in-process replay runs under: the caller's, or one with no rules that redacts the cassette's secret names. */
export function replayStorm(cassette: Cassette, options: CassetteReplayOptions): Storm {
  return options.storm ?? createStorm({ redact: { keys: cassette.header.redaction.keys } })
}

/** Answer this process's HTTP requests from `cassette` until disposed. */
export function replayCassette(cassette: Cassette, options: CassetteReplayOptions = {}): CassetteReplay {
  checkOptions('replayCassette()', cassetteReplayOptionsSchema, options)
  const storm = replayStorm(cassette, options)
  const source = inProcessSource(cassette, options, storm)
  const session = source.session
  // Served with the storm's plug-ins, as every transport: a replayed model call has its model and tokens in the report.
  const interception = intercept(storm, { source, ...(options.filter ? { filter: options.filter } : {}) })
  let state: CassetteReplayState = 'active'
  const dispose = () => {
    if (state === 'disposed') return
    state = 'disposed'
    interception.dispose()
    // A recorded wait still holding a request ends now.
    void source.close()
  }
  return {
    session,
    get readyState() {
      return state
    },
    verdict: () => session.verdict(),
    report: () => replayReport(session, 'in-process'),
    assertDone: () => session.assertDone(),
    dispose,
    [Symbol.dispose]: dispose,
  }
}
