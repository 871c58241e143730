/**
 * The port through which a status fault answers in a service's own shape: the faults say which
 * failure they inject, a plug-in that knows the service (model calls: `src/model-calls/
 * provider-errors.ts`) gives the status, headers and body its clients expect. With no shaper, or
 * when it does not know the request, the fault keeps its generic answer. `replace` asks the same
 * way for a result in the service's shape (MCP: a tool result answering the request's id).
 */
import type { RequestView } from '../http.js'

/** The status faults that may have a service's shape. */
export type ShapedFailure = 'rate_limit' | 'unavailable' | 'overloaded' | 'timeout'

/** One dimension of a rate limit, as the headers report it. */
export interface LimitWindow {
  readonly limit: number
  readonly remaining: number
  /** Seconds until the window is back to its full budget. */
  readonly resetSeconds: number
}

export interface FailureShapeOptions {
  /** Seconds the client is told to wait (`retry-after`, `retry-after-ms`); absent: no hint. */
  readonly retryAfter?: number | undefined
  /** The budget the call ran into (`token_limit`); absent for a plain `rate_limit`. */
  readonly requests?: LimitWindow | undefined
  readonly tokens?: LimitWindow | undefined
  /** Which budget was exceeded, for the message. */
  readonly exceeded?: 'requests' | 'tokens' | undefined
  /** Hashed into the request id, so a seed gives the same ids (the draw's inputs). */
  readonly identity: readonly unknown[]
  /** Wall-clock milliseconds, for reset times written as dates. */
  readonly nowMs?: number | undefined
}

export interface ShapedResponse {
  readonly status: number
  readonly headers: Record<string, string>
  readonly body: Uint8Array
}

/** A successful answer carrying `value` in the service's own shape, or null when it does not know the request. */
export type ResultShaper = (request: RequestView, value: unknown) => { readonly headers: Record<string, string>; readonly body: Uint8Array } | null

/**
 * `body` with the service's payload in it edited by `edit` (which mutates it and says whether it
 * did): MCP's tool `structuredContent` in its JSON-RPC answer. Null when the answer has no payload
 * or nothing changed; undefined when the plug-in does not know the request (the whole body is the payload).
 */
export type AnswerEditor = (request: RequestView, body: Uint8Array, edit: (payload: object) => boolean) => Uint8Array | null | undefined

/** The service's answer for `failure` on `request`, or null when it does not know the request. */
export type FailureShaper = (request: RequestView, failure: ShapedFailure, options: FailureShapeOptions) => ShapedResponse | null
