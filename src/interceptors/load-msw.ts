/**
 * msw, the optional peer dependency behind `stormHandlers()` and `cassetteHandlers()`, loaded on
 * first use rather than at import: `intercept()` and the proxy never need it, and importing msw
 * costs time and, on Node 26, prints its `localStorage` ExperimentalWarning.
 *
 * @note Loaded with require(): on Node >= 20.19 that resolves msw's ESM entry (the `module-sync`
 * condition of 2.x; 3.x is ESM only), so the handlers come from the very module instance the
 * project's own `import { setupServer } from 'msw/node'` uses. A second copy of msw would build
 * handlers its `setupServer` never matches.
 */
import { createRequire } from 'node:module'
import type * as Msw from 'msw'
import { MissingPeerError } from '../errors.js'

const require = createRequire(import.meta.url)
const SUPPORTED = '2.12 or later, or 3.x'
let msw: typeof Msw | undefined

/** The project's msw; `api` names the caller for the error when msw is missing. */
export function loadMsw(api: string): typeof Msw {
  if (msw) return msw
  let loaded: typeof Msw
  try {
    loaded = require('msw') as typeof Msw
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'MODULE_NOT_FOUND') throw error
    throw new MissingPeerError(`Failed to create ${api}: msw is not installed. It is an optional peer dependency of toolstorm; install it with \`npm i -D msw\` (${SUPPORTED}).`, { cause: error })
  }
  if (typeof loaded.http?.all !== 'function' || typeof loaded.getResponse !== 'function') {
    throw new MissingPeerError(`Failed to create ${api}: the installed msw is too old (no \`http\` handlers or \`getResponse\`). toolstorm needs msw ${SUPPORTED}.`)
  }
  msw = loaded
  return msw
}
