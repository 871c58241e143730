/**
 * Options for recording cassettes, shared by `proxy --record`, `record` and `replay` (and the
 * body's matching options by `mcp`).
 */
import type { Argv } from 'yargs'
import { createCassetteRecorder, type CassetteRecorder } from '../../cassette/record/cassette-recorder.js'
import type { RecorderRotation } from '../../cassette/record/recorder-options.js'
import type { IncidentOptions } from '../../incidents/incident-options.js'
import { ConfigError } from '../../errors.js'
import type { SharedCassetteBackend } from '../../cassette/record/shared-line-store.js'
import { DEFAULT_BODY_LIMIT, MAX_BODY_LIMIT } from '../../cassette/format/cassette-schema.js'
import { matchFromArgs, matchOptions, type MatchArgs } from './match-options.js'
import type { Storm } from '../../engine/storm.js'
import { bytesOption, numberOption, secondsOption } from '../numeric-options.js'

export interface IncidentArgs {
  incidents?: string
  'window-exchanges'?: number
  'window-seconds'?: number
  'max-incidents'?: number
  'max-bytes'?: number
}

export interface RecordArgs extends MatchArgs, IncidentArgs {
  'body-limit': number
  overwrite: boolean
  'rotate-size'?: number
  'rotate-every'?: number
  'rotate-keep'?: number
  'run-idle': number
  'url-form'?: 'origin' | 'absolute'
  'exclude-header': string[]
  'include-header': string[]
}

/** `--body-limit`, `--exclude-header` and the matching options. */
export function recordOptions<T>(yargs: Argv<T>): Argv<T & RecordArgs> {
  return matchOptions(yargs)
    .option('body-limit', { ...numberOption('body-limit', { min: 0, max: MAX_BODY_LIMIT }), default: DEFAULT_BODY_LIMIT, describe: 'Bytes stored per body (default 16 MiB); a longer body keeps a prefix marked truncated, is reported at stop, and breaks off in replay' })
    .option('overwrite', { type: 'boolean', default: false, describe: 'Replace the file instead of appending to the cassette there (a recording appends to an existing cassette as its next segment, and refuses any other file)' })
    .option('rotate-size', { ...bytesOption('rotate-size', 1024), describe: 'Rotate: record into parts FILE-0001.jsonl, FILE-0002.jsonl… (with an index FILE.index.jsonl), a new one once the current holds this many bytes (100MB, 1GiB)' })
    .option('rotate-every', { ...secondsOption('rotate-every', { min: 1, max: 365 * 86_400 }), describe: 'Rotate: a new part after this long (90s, 15m, 6h, 1d)' })
    .option('rotate-keep', { ...numberOption('rotate-keep', { min: 1, max: 1_000_000 }), describe: 'Rotate: keep at most this many parts on disk, deleting the oldest (each deletion is a line in the index)' })
    .option('run-idle', { ...secondsOption('run-idle', { min: 0.1, max: 86_400 }), default: 30, describe: 'A run with no exchange for this long is over: a rotated part stops waiting for it, an incident is decided (--incidents)' })
    .option('incidents', { type: 'string', describe: 'Flight recorder: keep each run that went wrong (upstream 5xx, reset or timeout, a fault, a duplicate effect, a failed contract, a contradicted claim, POST /incidents) as a small cassette with its report in this folder (docs/incidents.md)' })
    .option('window-exchanges', { ...numberOption('window-exchanges', { min: 1, max: 1_000_000 }), describe: 'Incidents: exchanges held per run at most, its last ones (default 1000)' })
    .option('window-seconds', { ...secondsOption('window-seconds', { min: 1, max: 7 * 86_400 }), describe: 'Incidents: the last this-long of a run held at most (default 10m)' })
    .option('max-incidents', { ...numberOption('max-incidents', { min: 1, max: 10_000_000 }), describe: 'Incidents kept at most; the oldest are deleted first (default 1000)' })
    .option('max-bytes', { ...bytesOption('max-bytes', 1024), describe: 'Bytes the incidents take at most; the oldest are deleted first (default 1GiB)' })
    .option('exclude-header', { type: 'string', array: true, default: [] as string[], describe: 'Header never stored (repeatable); secret headers are stored as [REDACTED] anyway' })
    .option('url-form', { choices: ['origin', 'absolute'] as const, describe: 'How request URLs are stored: origin (path and query; replay matches whatever host the client names) or absolute (scheme, host and port must match too). Default: origin with --target, absolute in forward mode' })
    .option('include-header', { type: 'string', array: true, default: [] as string[], describe: 'Store only these headers (repeatable allow-list); secret ones are still redacted' }) as unknown as Argv<T & RecordArgs>
}

/** A recorder writing to `file` for a proxy with these targets; with `shared`, every replica's exchanges. */
export function recorderFromArgs(storm: Storm, file: string, args: RecordArgs & { target: string[] }, shared?: SharedCassetteBackend | null): CassetteRecorder {
  return createCassetteRecorder(storm, {
    ...(shared ? { shared } : {}),
    file,
    overwrite: args.overwrite,
    ...(rotationFromArgs(args) ? { rotate: rotationFromArgs(args) } : {}),
    source: 'proxy',
    urlForm: args['url-form'] ?? (args.target.length ? 'origin' : 'absolute'),
    targets: args.target,
    bodyLimit: args['body-limit'],
    excludeHeaders: args['exclude-header'].map(String),
    includeHeaders: args['include-header'].map(String),
    match: matchFromArgs(args),
  })
}

/** `--rotate-size`, `--rotate-every`, `--rotate-keep` (and `--run-idle`), or undefined without rotation. */
export function rotationFromArgs(args: Pick<RecordArgs, 'rotate-size' | 'rotate-every' | 'rotate-keep' | 'run-idle'>): RecorderRotation | undefined {
  const size = args['rotate-size']
  const every = args['rotate-every']
  if (size === undefined && every === undefined) {
    if (args['rotate-keep'] !== undefined) throw new ConfigError('Failed to start recording: --rotate-keep bounds rotated parts; give --rotate-size or --rotate-every too.', { code: 'ERR_USAGE' })
    return undefined
  }
  return {
    ...(size !== undefined ? { maxBytes: size } : {}),
    ...(every !== undefined ? { everyMs: every * 1000 } : {}),
    ...(args['rotate-keep'] !== undefined ? { keep: args['rotate-keep'] } : {}),
    runIdleMs: args['run-idle'] * 1000,
  }
}

/** `--incidents DIR` and its bounds, as `startProxy({ incidents })` takes them (undefined without it). */
export function incidentsFromArgs(args: IncidentArgs & Pick<RecordArgs, 'run-idle'>, recorder: CassetteRecorder | null): IncidentOptions | undefined {
  if (args.incidents === undefined) {
    const stray = (['window-exchanges', 'window-seconds', 'max-incidents', 'max-bytes'] as const).find((flag) => args[flag] !== undefined)
    if (stray) throw new ConfigError(`Failed to start: --${stray} bounds the flight recorder; give --incidents DIR too.`, { code: 'ERR_USAGE' })
    return undefined
  }
  return {
    dir: args.incidents,
    runIdleMs: args['run-idle'] * 1000,
    ...(args['window-exchanges'] !== undefined ? { windowExchanges: args['window-exchanges'] } : {}),
    ...(args['window-seconds'] !== undefined ? { windowSeconds: args['window-seconds'] } : {}),
    ...(args['max-incidents'] !== undefined ? { maxIncidents: args['max-incidents'] } : {}),
    ...(args['max-bytes'] !== undefined ? { maxBytes: args['max-bytes'] } : {}),
    ...(recorder ? { recorder } : {}),
  }
}
