import type { CassetteRecorder } from '../cassette/record/cassette-recorder.js'
import { describeCutBodies } from '../cassette/format/cut-bodies.js'
import { indexFileFor } from '../cassette/record/cassette-parts.js'
import type { RedisRunState } from '../state/redis-run-state.js'

/**
 * The lines printed once a cassette is written (or left as it was, when nothing was recorded):
 * where (its parts, when rotated; the segment, when appended), with a shared store what the bounds
 * refused, and the bodies cut at the body limit (never silent: their replay breaks off).
 */
export async function cassetteWritten(file: string, recorder: CassetteRecorder, shared: RedisRunState | null): Promise<string[]> {
  if (recorder.keptPrevious) return [`no exchange recorded: the cassette ${file} was left as it was`]
  const left = recorder.leftToOthers
  if (left) return [`cassette not written here: ${left.others} other replica(s) still record into ${file} (by its name), and the last of them to stop writes every replica's runs into it; toolstorm report --state URL --cassette FILE writes it any time`]
  const cut = describeCutBodies(recorder.cutBodies, recorder.bodyLimit)
  const files = await recorder.files()
  if (files.length > 1 || (files[0] !== undefined && files[0] !== file)) {
    return [`cassette parts written: ${files.join(', ')} (${recorder.size} exchanges; where each run is: ${indexFileFor(file)})`, ...(cut ? [cut] : [])]
  }
  const refused = shared?.cassetteRefused ?? 0
  const start = recorder.started
  const written = shared
    ? `cassette written to ${file} (every replica's exchanges of the runs this one served; it recorded ${recorder.size})${refused ? `; ${refused} exchanges were over the run's bound in Redis and are missing` : ''}`
    : start?.action === 'appended'
      ? `cassette written to ${file} (${recorder.size} exchanges appended as segment ${start.segment}; ${start.previous + recorder.size} in all)`
      : `cassette written to ${file} (${recorder.size} exchanges)`
  return cut ? [written, cut] : [written]
}
