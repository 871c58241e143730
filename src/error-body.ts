/**
 * The JSON body of every error a toolstorm server answers itself (admin API, data plane, replay
 * server, in-process replay): `{"error":{"type","code","message"}}`, plus `details` (one line
 * each) for validation errors. One shape, so a client reads `error.code` wherever it came from.
 * See docs/errors.md.
 */
import { MESSAGE_PREFIX, type ErrorCode } from './errors.js'

/** What kind of answer it is: the admin API's, or which part of the data plane refused. */
export type ErrorBodyType = 'admin_error' | 'proxy_error' | 'replay_error' | 'cassette_mismatch' | 'upstream_unreachable' | 'call_budget_exhausted'

export interface ErrorBody {
  readonly error: { readonly type: ErrorBodyType; readonly code: ErrorCode | 'ERR_CALL_BUDGET'; readonly message: string; readonly details?: readonly string[] }
}

/**
 * The error body for `message`. On the data plane the message carries the `[toolstorm]` prefix:
 * the agent sees these among its upstream's answers. The admin API's are all toolstorm's: no prefix.
 */
export function errorBody(type: ErrorBodyType, code: ErrorBody['error']['code'], message: string, details?: readonly string[]): ErrorBody {
  const text = type === 'admin_error' ? message : `${MESSAGE_PREFIX} ${message}`
  return { error: details?.length ? { type, code, message: text, details } : { type, code, message: text } }
}
