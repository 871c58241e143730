/**
 * What `createCassetteRecorder()` (and `startProxy({ record })`) takes, and the schema it is checked
 * with: an unknown key is refused with a did-you-mean, a wrong value names the field
 * (options/check-options.ts). Its own file, as replay/replay-options.ts, so the recorder imports
 * its options and nothing imports back.
 */
import { z } from 'zod'
import { object, optionsSchema } from '../../options/check-options.js'
import { MAX_BODY_LIMIT, matchOptionsSchema, type MatchOptions } from '../format/cassette-schema.js'
import type { SharedCassetteBackend } from './shared-line-store.js'

export interface CassetteRecorderOptions {
  /**
   * Append each exchange to this cassette file as it finishes (version 4, append-only: valid at every
   * moment). A cassette already there is appended to, as its next segment; anything else there is
   * refused (`ERR_CASSETTE_EXISTS`) unless `overwrite`.
   */
  file?: string
  /**
   * Without a `file` or `shared` store: keep the lines in memory for `save()` and `cassette()`
   * (default true). False keeps them nowhere: only listeners (`recorder.listen`) see them.
   */
  memory?: boolean
  /** Replace whatever `file` holds instead of appending to the cassette there. Default false. */
  overwrite?: boolean
  /**
   * Record into parts `STEM-0001.jsonl`, `STEM-0002.jsonl`… beside `file`, with an index
   * `STEM.index.jsonl` saying where each run is (cassette-parts.ts, docs/incidents.md#rotation).
   */
  rotate?: RecorderRotation
  /** How the traffic was captured (header `source`). Default: `proxy` when given to `startProxy`, else `in-process`. */
  source?: 'proxy' | 'in-process'
  /**
   * `origin`: clients address a reverse proxy, so URLs are stored origin-form (`/path?query`) and
   * replay matches whatever host and port the client names. Default: `origin` when given to a
   * reverse-mode `startProxy` (as `toolstorm record --target` stores them), else `absolute`.
   */
  urlForm?: 'origin' | 'absolute'
  /** Reverse-mode targets, for the header. Default: the proxy's, when given to `startProxy`. */
  targets?: readonly string[]
  /**
   * Bytes stored per body at most (default 16 MiB); longer bodies keep a prefix marked `truncated`,
   * counted in `cutBodies`, and their replay breaks off.
   */
  bodyLimit?: number
  /** Header names never stored (case-insensitive), besides hop-by-hop and toolstorm's own. */
  excludeHeaders?: readonly string[]
  /** When given, the only header names stored (an allow-list; secret ones are still redacted). */
  includeHeaders?: readonly string[]
  /** Matching options written to the header (replay uses them unless told otherwise). */
  match?: Partial<MatchOptions>
  /**
   * Proxy replicas sharing runs through Redis (`--state`): lines go to the run's cassette stream
   * in Redis, and the cassette written (`file`, `save()`, `cassette()`) holds every replica's
   * exchanges of the runs this recorder saw, in call order, written when it closes: Redis holds
   * every finished exchange until then.
   */
  shared?: SharedCassetteBackend
  /** Milliseconds between checkpoints while recording with a `file`: fsync, and the claims and rules that changed (default 1000). */
  checkpointMs?: number
}

/** Rotation (`rotate`): at least one of `maxBytes` and `everyMs`. */
export interface RecorderRotation {
  /** A new part once the current one holds this many bytes of lines. */
  maxBytes?: number
  /** A new part after this many milliseconds. */
  everyMs?: number
  /** Parts kept at most (the oldest deleted first). Default: all. */
  keep?: number
  /** A run with no exchange for this long is done with the part it is in (default 30,000). */
  runIdleMs?: number
  /** The most a part waits for its active runs after the next one started (default 10 × runIdleMs). */
  drainMs?: number
}

const rotationSchema = z
  .strictObject({ maxBytes: z.int().min(1024).optional(), everyMs: z.number().min(1000).optional(), keep: z.int().min(1).optional(), runIdleMs: z.number().positive().optional(), drainMs: z.number().positive().optional() })
  .refine((rotation) => rotation.maxBytes !== undefined || rotation.everyMs !== undefined, { error: 'expected maxBytes or everyMs (when to start the next part)' })

/** `CassetteRecorderOptions` as `createCassetteRecorder()` checks it. */
export const cassetteRecorderOptionsSchema = optionsSchema<CassetteRecorderOptions>({
  file: z.string().min(1),
  overwrite: z.boolean(),
  memory: z.boolean(),
  rotate: rotationSchema,
  source: z.enum(['proxy', 'in-process']),
  urlForm: z.enum(['origin', 'absolute']),
  targets: z.array(z.string()),
  bodyLimit: z.int().min(0).max(MAX_BODY_LIMIT),
  excludeHeaders: z.array(z.string()),
  includeHeaders: z.array(z.string()),
  match: matchOptionsSchema.partial(),
  shared: object<SharedCassetteBackend>('a shared cassette store (a connected RedisRunState)'),
  checkpointMs: z.number().positive(),
})
