/**
 * Failures shaped like the model provider's own: when a status fault fires on a recognised model
 * call, the client gets the status, headers and JSON error body the provider sends, so the
 * official SDKs raise the same typed errors (`RateLimitError`, `InternalServerError`,
 * Anthropic's `OverloadedError`) and run the same retry logic as against the real service.
 *
 * Shapes, as the SDKs read them (openai 6.49.0 and @anthropic-ai/sdk 1.14.0 in Node, openai 3.22
 * and anthropic 1.13 in Python: `APIError.generate`, `shouldRetry`, `retryRequest`) and as the
 * providers' API references document them:
 * - OpenAI: `{"error":{"message","type","param","code"}}`, `x-request-id: req_…`; a 429 carries
 *   `x-ratelimit-{limit,remaining,reset}-{requests,tokens}` (resets as durations: `1s`, `6m0s`,
 *   `120ms`), `retry-after` and `retry-after-ms`; 503 `server_error` ("not ready yet", "overloaded").
 * - Anthropic: `{"type":"error","error":{"type","message"},"request_id"}`, `request-id: req_…`;
 *   429 `rate_limit_error` with `anthropic-ratelimit-{requests,tokens}-{limit,remaining,reset}`
 *   (resets as RFC 3339 times) and `retry-after`; 503 `api_error`; 504 `timeout_error`;
 *   529 `overloaded_error`.
 * @see ../../docs/streams.md#failures-shaped-like-the-providers
 */
import { createHash } from 'node:crypto'
import { canonicalJson } from '../json/canonical-json.js'
import type { RequestView } from '../engine/http.js'
import type { FailureShapeOptions, FailureShaper, ShapedFailure, ShapedResponse } from '../engine/faults/failure-shape.js'
import { retryHeaders } from '../engine/faults/retry-headers.js'
import { recognizeModelCall, type ModelEndpoint } from './recognize-model-call.js'

/** The model API `request` calls, or null (then the fault keeps its generic answer). */
export function modelEndpointOf(request: RequestView): ModelEndpoint | null {
  let url: URL
  try {
    url = new URL(request.url)
  } catch {
    return null
  }
  return recognizeModelCall(request.method, url, request.headers)
}

/** The provider's answer for `failure` on `request`, or null when it is not a model call. */
export const providerError: FailureShaper = (request, failure, options) => {
  const endpoint = modelEndpointOf(request)
  if (!endpoint) return null
  return endpoint.provider === 'anthropic' ? anthropicError(failure, options) : openaiError(failure, options)
}

function openaiError(failure: ShapedFailure, options: FailureShapeOptions): ShapedResponse {
  const headers: Record<string, string> = { 'content-type': 'application/json', 'x-request-id': `req_${digest(options.identity, 16)}` }
  const error = (status: number, message: string, type: string, code: string | null) => ({
    status,
    headers,
    body: encode({ error: { message, type, param: null, code } }),
  })
  switch (failure) {
    case 'rate_limit': {
      const wait = options.retryAfter ?? 0
      Object.assign(headers, retryHeaders(options.retryAfter))
      const { requests, tokens } = options
      if (requests) Object.assign(headers, { 'x-ratelimit-limit-requests': String(requests.limit), 'x-ratelimit-remaining-requests': String(requests.remaining), 'x-ratelimit-reset-requests': openaiDuration(requests.resetSeconds) })
      if (tokens) Object.assign(headers, { 'x-ratelimit-limit-tokens': String(tokens.limit), 'x-ratelimit-remaining-tokens': String(tokens.remaining), 'x-ratelimit-reset-tokens': openaiDuration(tokens.resetSeconds) })
      // A plain rate limit knows no budget: it reports the requests window as spent.
      if (!requests && !tokens) Object.assign(headers, { 'x-ratelimit-remaining-requests': '0', 'x-ratelimit-reset-requests': openaiDuration(wait) })
      const over = options.exceeded === 'tokens' && tokens ? tokens : options.exceeded === 'requests' && requests ? requests : null
      const dimension = options.exceeded === 'tokens' ? 'tokens per min (TPM)' : 'requests per min (RPM)'
      const figures = over ? `: Limit ${over.limit}, Used ${over.limit - over.remaining}, Requested 1` : ''
      const message = `Rate limit reached on ${dimension}${figures}. Please try again in ${openaiDuration(wait)}.`
      return error(429, message, options.exceeded ?? 'requests', 'rate_limit_exceeded')
    }
    // 503 on every route (docs/rules.md): a kind keeps its status; only the body takes the provider's shape.
    case 'unavailable':
      return error(503, 'The server is overloaded or not ready yet.', 'server_error', null)
    case 'overloaded':
      Object.assign(headers, retryHeaders(options.retryAfter))
      return error(503, 'The engine is currently overloaded, please try again later.', 'server_error', null)
    case 'timeout':
      return error(504, 'Gateway timeout: the request took too long to process.', 'server_error', null)
  }
}

function anthropicError(failure: ShapedFailure, options: FailureShapeOptions): ShapedResponse {
  const requestId = `req_${digest(options.identity, 24)}`
  const headers: Record<string, string> = { 'content-type': 'application/json', 'request-id': requestId }
  const error = (status: number, type: string, message: string) => ({ status, headers, body: encode({ type: 'error', error: { type, message }, request_id: requestId }) })
  switch (failure) {
    case 'rate_limit': {
      Object.assign(headers, retryHeaders(options.retryAfter))
      const now = options.nowMs ?? Date.now()
      const at = (seconds: number) => new Date(now + Math.ceil(seconds) * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z')
      const { requests, tokens } = options
      if (requests) Object.assign(headers, { 'anthropic-ratelimit-requests-limit': String(requests.limit), 'anthropic-ratelimit-requests-remaining': String(requests.remaining), 'anthropic-ratelimit-requests-reset': at(requests.resetSeconds) })
      if (tokens) Object.assign(headers, { 'anthropic-ratelimit-tokens-limit': String(tokens.limit), 'anthropic-ratelimit-tokens-remaining': String(tokens.remaining), 'anthropic-ratelimit-tokens-reset': at(tokens.resetSeconds) })
      if (!requests && !tokens) Object.assign(headers, { 'anthropic-ratelimit-requests-remaining': '0', 'anthropic-ratelimit-requests-reset': at(options.retryAfter ?? 0) })
      const message =
        options.exceeded === 'tokens' && tokens
          ? `This request would exceed the rate limit for your organization of ${tokens.limit.toLocaleString('en-US')} tokens per minute. Please try again later.`
          : options.exceeded === 'requests' && requests
            ? `This request would exceed the rate limit for your organization of ${requests.limit.toLocaleString('en-US')} requests per minute. Please try again later.`
            : 'Number of requests has exceeded your rate limit. Please try again later.'
      return error(429, 'rate_limit_error', message)
    }
    case 'unavailable':
      return error(503, 'api_error', 'Service unavailable')
    case 'overloaded':
      Object.assign(headers, retryHeaders(options.retryAfter))
      return error(529, 'overloaded_error', 'Overloaded')
    case 'timeout':
      return error(504, 'timeout_error', 'Request timed out')
  }
}

/** A duration as OpenAI's reset headers write it: `120ms`, `1.5s`, `6m0s`. */
export function openaiDuration(seconds: number): string {
  if (seconds < 1) return `${Math.max(0, Math.round(seconds * 1000))}ms`
  if (seconds < 60) return `${Number(seconds.toFixed(3))}s`
  const minutes = Math.floor(seconds / 60)
  return `${minutes}m${Number((seconds - minutes * 60).toFixed(3))}s`
}

function digest(identity: readonly unknown[], length: number): string {
  return createHash('sha256').update(canonicalJson(identity), 'utf8').digest('hex').slice(0, length)
}

function encode(value: unknown): Uint8Array {
  return new TextEncoder().encode(JSON.stringify(value))
}
