/** In-process transports: `intercept()` over global fetch and node:http, and MSW handlers. */
export { intercept } from './intercept.js'
export type { Interception, InterceptOptions, InterceptionState } from './intercept.js'
export { stormHandlers } from './msw-handlers.js'
export type { StormHandlerOptions } from './msw-handlers.js'
export { createConnectionResetError, createFetchResetError } from './network-error.js'
