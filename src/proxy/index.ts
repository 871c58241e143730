/** The standalone proxy as a library: start it in a test or a script. */
export { startProxy } from './proxy-server.js'
export type { ProxyOptions, ProxyServer, ProxyState } from './proxy-server.js'
export type { ProxyRecordOptions } from './proxy-recording.js'
export type { RedisStateOptions } from '../state/state-options.js'
export type { RedisRunState } from '../state/redis-run-state.js'
export type { StateUnavailablePolicy } from './begin-in-ledger.js'
export { parseTargets } from './targets.js'
/** The local CA of `toolstorm ca` (docs/https.md): `startProxy({ ca: (await openCertificateAuthority(dir)).ca })`. */
export { defaultCaDir, openCertificateAuthority } from './tls/certificate-authority.js'
export type { CertificateAuthority } from './tls/certificate-authority.js'
export type { Target } from './targets.js'
