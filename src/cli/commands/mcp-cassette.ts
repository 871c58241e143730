/**
 * The cassette side of `toolstorm mcp` (`--record`, `--replay`), loaded by mcp-session.ts only when
 * one of them is given: a plain wrapper does not load the cassette format, recorder and replay.
 */
import { existsSync } from 'node:fs'
import type { AdminRoute } from '../../proxy/admin/events.js'
import type { ExchangeObserver } from '../../engine/exchange-flow.js'
import type { Storm } from '../../engine/storm.js'
import type { UpstreamSource } from '../../engine/upstream-source.js'
import { ERROR_CODES } from '../../errors.js'
import { Cassette } from '../../cassette/format/cassette.js'
import { createCassetteRecorder } from '../../cassette/record/cassette-recorder.js'
import { cassetteAdminRoute } from '../../proxy/admin/cassette-admin-route.js'
import { replaySource } from '../../cassette/replay/replay-source.js'
import { replayAdminRoute } from '../../proxy/replay/replay-server.js'
import { formatReplayTable } from '../../cassette/replay/replay-table.js'
import { createRedactor } from '../../redact/index.js'
import type { ContinuedRun } from '../../stdio/run-state.js'
import { printError } from '../output.js'
import { cassetteWritten } from '../cassette-written.js'
import type { McpArgs, McpReadyInfo } from './mcp.js'
import { matchFromArgs } from './match-options.js'

export interface McpCassette {
  /** The replay's source (answers from the cassette), when replaying. */
  readonly source: UpstreamSource | undefined
  /** The recorder's observer, when recording. */
  readonly observer: ExchangeObserver | undefined
  readonly routes: AdminRoute[]
  readonly ready: NonNullable<McpReadyInfo['cassette']>
  /** Stop recording: discard what was recorded (the start failed). */
  discard(): Promise<void>
  /** The connection ended: write the cassette (recording), close the replay. */
  close(): Promise<void>
  /** The replay's verdict, printed; its exit code when it failed (null: passed, or recording). */
  verdict(): number | null
}

/** `recordFile`: `--record` as an absolute path; `continued`: the run this launch continues (`--state-dir`). */
export async function mcpCassette(args: McpArgs, storm: Storm, continued: ContinuedRun, recordFile: string | null): Promise<McpCassette> {
  if (args.replay !== undefined) {
    const cassette = await Cassette.load(args.replay)
    const replay = replaySource(cassette, {
      order: args.order,
      allowUnused: args['allow-unused'],
      allowRepeats: args['allow-repeats'],
      live: args.live.map(String),
      match: matchFromArgs(args),
      redactor: createRedactor({ keys: [...cassette.header.redaction.keys, ...storm.config.redact.keys], secrets: storm.config.redact.secrets }),
    })
    return {
      source: replay,
      observer: undefined,
      routes: [replayAdminRoute(replay.session, 'replay')],
      ready: { file: args.replay, mode: 'replay', exchanges: cassette.exchanges.length },
      discard: async () => undefined,
      close: () => replay.close(),
      verdict() {
        const verdict = replay.session.verdict()
        printError(verdict.message)
        if (verdict.passed) return null
        for (const line of formatReplayTable(verdict.rows).split('\n')) process.stderr.write(`  ${line}\n`)
        process.stderr.write(`  (${verdict.code})\n`)
        return ERROR_CODES[verdict.code as keyof typeof ERROR_CODES].exit
      },
    }
  }
  const file = args.record as string
  // Stored as a reverse proxy stores them (origin-form URLs), matched by method, tool and arguments.
  // A cassette there (an earlier launch's, of this run with --state-dir, or a crashed one's) is
  // continued as its next segment, unless --overwrite.
  const recorder = createCassetteRecorder(storm, { file, source: 'proxy', urlForm: 'origin', overwrite: args.overwrite, match: matchFromArgs(args) })
  if (continued.continued && continued.record !== null) {
    if (continued.record !== recordFile) printError(`the earlier launches of this run recorded into ${continued.record}; this one records into ${recordFile} alone`)
    else if (!existsSync(recordFile)) printError(`the earlier launches of this run recorded into ${recordFile}, which is gone: their exchanges are not in this recording`)
  }
  const opened = await recorder.ready()
  if (opened) printError(opened.message)
  return {
    source: undefined,
    observer: recorder.observer,
    routes: [cassetteAdminRoute(recorder)],
    ready: { file, mode: 'record' },
    discard: () => recorder.discard(),
    async close() {
      await recorder.close()
      for (const line of await cassetteWritten(file, recorder, null)) printError(line)
    },
    verdict: () => null,
  }
}
