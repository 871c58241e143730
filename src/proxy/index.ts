/** The standalone proxy as a library: start it in a test or a script. */
export { startProxy } from './proxy-server.js'
export type { ProxyOptions, ProxyServer, ProxyState } from './proxy-server.js'
export { parseTargets } from './targets.js'
export type { Target } from './targets.js'
