import type { CassetteRecorder } from '../cassette/record/cassette-recorder.js'
import { describeCutBodies } from '../cassette/format/cut-bodies.js'
import type { RedisRunState } from '../state/redis-run-state.js'

/**
 * The lines printed once a cassette is written (or left as it was, when nothing was recorded):
 * where, with a shared store what the bounds refused, and the bodies cut at the body limit (never
 * silent: their replay breaks off).
 */
export function cassetteWritten(file: string, recorder: CassetteRecorder, shared: RedisRunState | null): string[] {
  if (recorder.keptPrevious) return [`no exchange recorded: the cassette ${file} was left as it was`]
  const refused = shared?.cassetteRefused ?? 0
  const written = shared
    ? `cassette written to ${file} (every replica's exchanges of the runs this one served; it recorded ${recorder.size})${refused ? `; ${refused} exchanges were over the run's bound in Redis and are missing` : ''}`
    : `cassette written to ${file} (${recorder.size} exchanges)`
  const cut = describeCutBodies(recorder.cutBodies, recorder.bodyLimit)
  return cut ? [written, cut] : [written]
}

