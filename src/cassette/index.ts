/**
 * Cassettes: record exchanges once, replay them strictly with no upstream, export and import HAR.
 * @see ../../docs/cassettes.md
 */

/* The format */
export { Cassette } from './format/cassette.js'
export type { LoadCassetteOptions, CassetteHeaderInput } from './format/cassette.js'
export {
  CASSETTE_KIND,
  DEFAULT_BODY_LIMIT,
  cassetteHeaderSchema,
  cassetteExchangeSchema,
  matchOptionsSchema,
} from './format/cassette-schema.js'
export type { CassetteHeader, CassetteExchange, StoredBody, StoredRequest, StoredResponse, StoredEffect, StoredFault, MatchOptions } from './format/cassette-schema.js'

/* Recording */
export { createCassetteRecorder } from './record/cassette-recorder.js'
export type { CassetteRecorder, RecorderState } from './record/cassette-recorder.js'
export type { CassetteRecorderOptions } from './record/recorder-options.js'

/* Replay */
export { replayCassette } from './replay/replay-cassette.js'
export type { CassetteReplay, CassetteReplayState } from './replay/replay-cassette.js'
export type { CassetteReplayOptions } from './replay/replay-options.js'
export type { ReplayServerOptions, ReplayServerMode } from '../proxy/replay/replay-server-options.js'
export { cassetteHandlers } from './replay/cassette-handlers.js'
export type { CassetteHandlers } from './replay/cassette-handlers.js'
export { startReplayServer } from '../proxy/replay/replay-server.js'
export { replaySource } from './replay/replay-source.js'
export type { ReplaySource, ReplaySourceOptions, ReplayMode } from './replay/replay-source.js'
export type { ReplayServer, ReplayServerState } from '../proxy/replay/replay-server.js'
export { formatReplayTable } from './replay/replay-table.js'
export type { ReplayRow } from './replay/replay-table.js'
export type { ReplaySession } from './replay/replay-session.js'
export type { ReplayOptions, ReplayOrder } from './replay/replay-options.js'
export type { ReplayVerdict } from './replay/replay-verdict.js'
export { replayReportSchema, REPLAY_REPORT_KIND } from './replay/replay-report.js'
export type { ReplayReport } from './replay/replay-report.js'

/* HAR */
export { exportHar } from './har/har-export.js'
export { importHar } from './har/har-import.js'
export type { ImportHarOptions } from './har/har-import.js'
