/** The standalone proxy as a library: start it in a test or a script. */
export { startProxy } from './proxy-server.js'
export type { ProxyOptions, ProxyServer, ProxyState } from './proxy-server.js'
export type { RedisStateOptions } from '../engine/state/state-options.js'
export type { RedisRunState } from '../engine/state/redis-run-state.js'
export type { StateUnavailablePolicy } from './shared-state-serve.js'
export { parseTargets } from './targets.js'
export type { Target } from './targets.js'
