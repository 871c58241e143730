/**
 * Options for recording cassettes, shared by `proxy --record`, `record` and `replay`.
 */
import type { Argv } from 'yargs'
import { createCassetteRecorder, type CassetteRecorder } from '../../cassette/record/cassette-recorder.js'
import type { RecorderRotation } from '../../cassette/record/recorder-options.js'
import type { IncidentOptions } from '../../incidents/incident-options.js'
import { ConfigError } from '../../errors.js'
import type { SharedCassetteBackend } from '../../cassette/record/shared-line-store.js'
import type { z } from 'zod'
import { DEFAULT_BODY_LIMIT, MAX_BODY_LIMIT, MAX_USER_NORMALISERS, NORMALISERS, normalisePathSchema, normalisePatternSchema, type MatchOptions, type Normaliser } from '../../cassette/format/cassette-schema.js'
import type { Storm } from '../../engine/storm.js'
import { bytesOption, numberOption, secondsOption } from '../numeric-options.js'

export interface MatchArgs {
  'match-header': string[]
  'ignore-query': string[]
  'ignore-body-field': string[]
  /** `none`: no normaliser, not even the cassette header's (replay). */
  normalize: Normaliser[] | 'none'
  'normalize-pattern': string[]
  'normalize-path': string[]
}

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

/**
 * `--normalize ids,timestamps`: names, comma-separated or repeated; `none` alone turns them all
 * off (a replay then ignores the header's). A usage error (exit 2) names an unknown one.
 */
function parseNormalisers(value: unknown): Normaliser[] | 'none' {
  const names = (Array.isArray(value) ? value : [value]).flatMap((item) => String(item).split(',')).map((name) => name.trim()).filter((name) => name !== '')
  if (names.includes('none')) {
    if (names.some((name) => name !== 'none')) throw new Error(`--normalize: "none" turns every normaliser off and takes no other name, got ${JSON.stringify(names.join(','))}`)
    return 'none'
  }
  for (const name of names) if (!(NORMALISERS as readonly string[]).includes(name)) throw new Error(`--normalize: expected ${NORMALISERS.join(', ')} (comma-separated) or none, got ${JSON.stringify(name)}`)
  return [...new Set(names as Normaliser[])]
}

/** Each value of a repeatable user-normaliser flag, checked by the header's own schema: a usage error (exit 2) names the flag. */
function checkedWith(flag: string, schema: z.ZodType<string>) {
  return (value: unknown): string[] => {
    const values = (Array.isArray(value) ? value : [value]).map(String)
    if (values.length > MAX_USER_NORMALISERS) throw new Error(`--${flag}: at most ${MAX_USER_NORMALISERS}, got ${values.length}`)
    for (const item of values) {
      const checked = schema.safeParse(item)
      if (!checked.success) throw new Error(`--${flag}: ${checked.error.issues[0]?.message ?? 'invalid'}`)
    }
    return values
  }
}

/** `--match-header`, `--ignore-query`, `--ignore-body-field`, `--normalize`, `--normalize-pattern`, `--normalize-path`. */
export function matchOptions<T>(yargs: Argv<T>): Argv<T & MatchArgs> {
  return yargs
    .option('match-header', { type: 'string', array: true, default: [] as string[], describe: 'Request header replay compares too (repeatable)' })
    .option('ignore-query', { type: 'string', array: true, default: [] as string[], describe: 'Query parameter replay ignores (repeatable)' })
    .option('ignore-body-field', { type: 'string', array: true, default: [] as string[], describe: 'Body field replay ignores: a JSON key at any depth, or a form field (repeatable)' })
    .option('normalize', { type: 'string', array: true, default: [] as string[], coerce: parseNormalisers, describe: `Values replay treats as equal in model and MCP tool calls: ${NORMALISERS.join(', ')} (comma-separated; kept in the cassette header), or none (replay: not even the header's, the patterns and paths too)` })
    .option('normalize-pattern', { type: 'string', array: true, default: [] as string[], coerce: checkedWith('normalize-pattern', normalisePatternSchema), describe: "Regular expression whose matches replay treats as equal anywhere in a request body, as 'SHP-\\d+' (repeatable; kept in the cassette header; on replay, instead of the header's)" })
    .option('normalize-path', { type: 'string', array: true, default: [] as string[], coerce: checkedWith('normalize-path', normalisePathSchema), describe: "JSON path whose values replay treats as equal in a JSON request body, as '$.messages[*].content' (repeatable; kept in the cassette header; on replay, instead of the header's)" }) as unknown as Argv<T & MatchArgs>
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

/** Matching options given on the command line (empty lists mean "as recorded"). */
export function matchFromArgs(args: MatchArgs): Partial<MatchOptions> {
  return {
    ...(args['match-header'].length ? { headers: args['match-header'].map(String) } : {}),
    ...(args['ignore-query'].length ? { ignoreQuery: args['ignore-query'].map(String) } : {}),
    ...(args['ignore-body-field'].length ? { ignoreBodyFields: args['ignore-body-field'].map(String) } : {}),
    ...(args.normalize === 'none' ? { normalize: [], normalizePatterns: [], normalizePaths: [] } : args.normalize.length ? { normalize: args.normalize } : {}),
    ...(args['normalize-pattern'].length ? { normalizePatterns: args['normalize-pattern'] } : {}),
    ...(args['normalize-path'].length ? { normalizePaths: args['normalize-path'] } : {}),
  }
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
