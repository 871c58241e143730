/**
 * What `startReplayServer()` takes, and the schema it checks them with: the replay fields shared
 * with in-process replay (cassette/replay/replay-options.ts) and the proxy's own. An unknown key is
 * refused with a did-you-mean (options/check-options.ts).
 */
import type { UserDispatcher } from '../../options/user-dispatcher.js'
import { z } from 'zod'
import { fn, object, optionsSchema } from '../../options/check-options.js'
import type { Storm } from '../../engine/storm.js'
import { replayShape, type ReplayOptions } from '../../cassette/replay/replay-options.js'
import type { ReplayMode } from '../../cassette/replay/replay-source.js'
import type { ProxyOptions } from '../proxy-options.js'
import type { CertificateAuthority } from '../tls/certificate-authority.js'
import type { UpstreamTlsOptions } from '../tls/upstream-tls.js'

export type ReplayServerMode = ReplayMode

export interface ReplayServerOptions extends Omit<ReplayOptions, 'passthroughUnmatched'> {
  mode?: ReplayServerMode
  /** Interface for both servers. Default 127.0.0.1. */
  host?: string
  /** Port (0 picks a free one). Default 0. */
  port?: number
  adminPort?: number
  adminToken?: string
  /** Host names the admin API also answers to (`ProxyOptions.adminAllowHosts`). */
  adminAllowHosts?: ProxyOptions['adminAllowHosts']
  /** Host names the data plane also answers to (`ProxyOptions.allowHosts`). */
  allowHosts?: ProxyOptions['allowHosts']
  /** Where unmatched requests go in `update` and `passthrough-unmatched` modes (origin-form requests need one). */
  targets?: readonly string[]
  /** The storm unmatched requests run through (its rules apply to them). Default: no rules. */
  storm?: Storm
  /** `update` mode: the file the session's cassette is written to on close (default: the cassette's own file). */
  updateFile?: string
  dispatcher?: UserDispatcher
  // HTTPS (docs/https.md) -------------------------------------------------------------------
  /**
   * The CA whose leaves clients see inside `CONNECT` tunnels (trust its `certificatePem`), or a
   * function that makes it on the first CONNECT. Default: a CA in this process's memory, made at
   * start when the cassette holds an `https://` exchange, else on the first CONNECT.
   */
  ca?: ProxyOptions['ca']
  /** Ports CONNECT may reach besides 443 and the ports of the origins recorded in the cassette. */
  connectPorts?: readonly number[]
  /** A client refused the CA's leaf during the TLS handshake (it does not trust the CA). */
  onCertificateRefused?: (host: string, reason: string) => void
  /** Passthrough modes: extra CA certificates (PEM) trusted for upstream HTTPS. */
  upstreamCa?: UpstreamTlsOptions['upstreamCa']
  /** Passthrough modes: do not verify upstream certificates. Only for tests against self-signed upstreams. */
  insecureSkipUpstreamTlsVerification?: boolean
  /** Where problems worth a console line go: an unreachable upstream, once per origin and error code. Default: nowhere. */
  warn?: (message: string) => void
}

const port = z.number().int().min(0).max(65535)

export const replayServerOptionsSchema = optionsSchema<ReplayServerOptions>({
  ...replayShape,
  mode: z.enum(['replay', 'update', 'passthrough-unmatched']),
  host: z.string().min(1),
  port,
  adminPort: port,
  adminToken: z.string(),
  adminAllowHosts: z.array(z.string()),
  allowHosts: z.array(z.string()),
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
