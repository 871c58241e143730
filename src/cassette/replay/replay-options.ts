/**
 * What replay takes (`ReplayOptions`, the session's), what in-process replay (`replayCassette()`,
 * `cassetteHandlers()`) takes besides, and the schema it checks them with: an unknown key is refused with a did-you-mean (options/check-options.ts). The replay
 * fields are shared with `startReplayServer()` (proxy/replay/replay-server-options.ts), so they are
 * spelled once. Its own file, so the entry points import their options and nothing imports back.
 */
import { z } from 'zod'
import { fn, object, optionsSchema, type OptionsShape } from '../../options/check-options.js'
import { matchOptionsSchema } from '../format/cassette-schema.js'
import type { Redactor } from '../../redact/index.js'
import type { Storm } from '../../engine/storm.js'
import type { MatchOptions } from '../format/cassette-schema.js'
import type { ReplaySpeed } from './replay-stream.js'

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

export interface CassetteReplayOptions extends Omit<ReplayOptions, 'passthroughUnmatched'> {
  /** Which requests the cassette answers; the rest reach the network untouched. Default: all. */
  filter?: (url: URL, method: string) => boolean
  /** Requests that match nothing reach the network instead of failing (`passthrough-unmatched`). */
  passthroughUnmatched?: boolean
  /**
   * The storm whose rules, effects and contracts apply to every request, replayed or live (a
   * `live` route reaches its server under these rules, as with `toolstorm replay --rules`).
   * Default: one with no rules. Its redaction settings join the cassette's secret names.
   */
  storm?: Storm
}

/** The replay fields, spelled once: in-process replay's and the replay server's (proxy/replay/replay-server-options.ts). */
export const replayShape: OptionsShape<Omit<ReplayOptions, 'passthroughUnmatched'>> = {
  order: z.enum(['strict', 'any']),
  allowRepeats: z.boolean(),
  allowUnused: z.boolean(),
  allowTruncated: z.boolean(),
  match: matchOptionsSchema.partial(),
  live: z.array(z.string()),
  replayOnly: z.array(z.string()),
  redactor: object<Redactor>('a Redactor (createRedactor())'),
  speed: z.enum(['instant', 'recorded']),
}

export const cassetteReplayOptionsSchema = optionsSchema<CassetteReplayOptions>({
  ...replayShape,
  filter: fn(),
  passthroughUnmatched: z.boolean(),
  storm: object('a storm (createStorm())'),
})
