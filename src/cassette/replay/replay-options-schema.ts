/**
 * The options of in-process replay (`replayCassette()`, `cassetteHandlers()`) and of
 * `startReplayServer()`, as each checks them: an unknown key is refused with a did-you-mean
 * (options/check-options.ts). The replay fields are shared, so they are spelled once.
 */
import { z } from 'zod'
import { fn, object, optionsSchema, type OptionsShape } from '../../options/check-options.js'
import { matchOptionsSchema } from '../format/cassette-schema.js'
import type { Redactor } from '../../redact/index.js'
import type { CertificateAuthority } from '../../proxy/tls/certificate-authority.js'
import type { CassetteReplayOptions } from './replay-cassette.js'
import type { ReplayServerOptions } from './replay-server.js'
import type { ReplayOptions } from './replay-session.js'

const port = z.number().int().min(0).max(65535)

const replayShape: OptionsShape<Omit<ReplayOptions, 'passthroughUnmatched'>> = {
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

export const replayServerOptionsSchema = optionsSchema<ReplayServerOptions>({
  ...replayShape,
  mode: z.enum(['replay', 'update', 'passthrough-unmatched']),
  host: z.string().min(1),
  port,
  adminPort: port,
  adminToken: z.string(),
  adminAllowHosts: z.array(z.string()),
  targets: z.array(z.string()),
  storm: object('a storm (createStorm())'),
  updateFile: z.string().min(1),
  dispatcher: object('an undici Dispatcher'),
  ca: z.union([object<CertificateAuthority>('a CertificateAuthority'), fn<() => Promise<CertificateAuthority>>()], { error: 'expected a CertificateAuthority or a function that makes one' }),
  connectPorts: z.array(port),
  onCertificateRefused: fn(),
  upstreamCa: z.array(z.string()),
  insecureSkipUpstreamTlsVerification: z.boolean(),
  warn: fn(),
})
