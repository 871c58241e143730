/**
 * What in-process replay (`replayCassette()`, `cassetteHandlers()`) takes, and the schema it checks
 * them with: an unknown key is refused with a did-you-mean (options/check-options.ts). The replay
 * fields are shared with `startReplayServer()` (proxy/replay/replay-server-options.ts), so they are
 * spelled once. Its own file, so the entry points import their options and nothing imports back.
 */
import { z } from 'zod'
import { fn, object, optionsSchema, type OptionsShape } from '../../options/check-options.js'
import { matchOptionsSchema } from '../format/cassette-schema.js'
import type { Redactor } from '../../redact/index.js'
import type { Storm } from '../../engine/storm.js'
import type { ReplayOptions } from './replay-session.js'

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
