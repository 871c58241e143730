/**
 * What `startProxy({ incidents })` takes (`--incidents DIR` and its bounds), checked like every
 * option (an unknown key is refused with a did-you-mean).
 */
import { z } from 'zod'
import { object, optionsSchema } from '../options/check-options.js'
import type { CassetteRecorder } from '../cassette/record/cassette-recorder.js'

export interface IncidentOptions {
  /** The folder incidents are kept in (created if missing). */
  dir: string
  /** A run with no exchange for this long has ended (default 30,000 ms). */
  runIdleMs?: number
  /** Exchanges a run's window holds at most: its last ones (default 1,000). */
  windowExchanges?: number
  /** Seconds of a run a window holds at most (default 600). */
  windowSeconds?: number
  /** Bytes all windows hold together at most (default 256 MiB). */
  maxBufferBytes?: number
  /** Incidents kept at most, the oldest deleted first (default 1,000). */
  maxIncidents?: number
  /** Bytes the incidents take at most, the oldest deleted first (default 1 GiB). */
  maxBytes?: number
  /** The recorder whose lines to hold (the proxy's own `record`, else one made for this, keeping nothing else). */
  recorder?: CassetteRecorder
}

export const incidentOptionsSchema = optionsSchema<IncidentOptions>({
  dir: z.string().min(1),
  runIdleMs: z.number().positive(),
  windowExchanges: z.int().min(1),
  windowSeconds: z.number().positive(),
  maxBufferBytes: z.int().min(1024),
  maxIncidents: z.int().min(1),
  maxBytes: z.int().min(1024),
  recorder: object<CassetteRecorder>('a CassetteRecorder'),
})
