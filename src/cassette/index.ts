/**
 * Cassettes: record exchanges once, replay them strictly with no upstream, export and import HAR.
 * @see ../../docs/cassettes.md
 */

/* The format */
export { Cassette } from './cassette.js'
export type { LoadCassetteOptions, CassetteHeaderInput } from './cassette.js'
export {
  CASSETTE_KIND,
  DEFAULT_BODY_LIMIT,
  cassetteHeaderSchema,
  cassetteExchangeSchema,
  matchOptionsSchema,
} from './cassette-schema.js'
export type { CassetteHeader, CassetteExchange, StoredBody, StoredRequest, StoredResponse, StoredEffect, StoredFault, MatchOptions } from './cassette-schema.js'

/* Recording */
export { createCassetteRecorder } from './cassette-recorder.js'
export type { CassetteRecorder, CassetteRecorderOptions, RecorderState } from './cassette-recorder.js'

/* Replay */
export { replayCassette } from './replay-cassette.js'
export type { CassetteReplay, CassetteReplayOptions, CassetteReplayState } from './replay-cassette.js'
export { cassetteHandlers } from './cassette-handlers.js'
export type { CassetteHandlers } from './cassette-handlers.js'
export { startReplayServer } from './replay-server.js'
export { replaySource } from './replay-source.js'
export type { ReplaySource, ReplaySourceOptions, ReplayMode } from './replay-source.js'
export type { ReplayServer, ReplayServerOptions, ReplayServerMode, ReplayServerState } from './replay-server.js'
export { formatReplayTable } from './replay-session.js'
export type { ReplaySession, ReplayOptions, ReplayOrder, ReplayVerdict, ReplayRow } from './replay-session.js'
export { replayReportSchema, REPLAY_REPORT_KIND } from './replay-report.js'
export type { ReplayReport } from './replay-report.js'

/* HAR */
export { exportHar } from './har-export.js'
export { importHar } from './har-import.js'
export type { ImportHarOptions } from './har-import.js'
