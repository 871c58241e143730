/**
 * The live upstream source: requests go to the real upstream through the proxy's keep-alive pool
 * (upstream-pool.ts) or a user's undici dispatcher, whichever `UpstreamClient` the server holds.
 * The socket sink's fast path drives the same pool directly (socket-sink.ts).
 */
import { errorBody } from '../../error-body.js'
import type { ForwardOptions, SourceAction, UpstreamExchange } from '../../engine/exchange-transport.js'
import type { HeaderMap } from '../../engine/http.js'
import type { SourceRequest, UpstreamSource, UpstreamTarget } from '../../engine/upstream-source.js'
import { endToEndHeaders } from '../hop-by-hop.js'
import type { UpstreamClient } from './upstream-client.js'
import { DispatchedResponse, sendUpstream } from './upstream-dispatch.js'
import type { UpstreamFailures } from './upstream-failures.js'

/** The request headers the upstream gets: end-to-end ones, its own Host, and what the flow sets. */
export function forwardHeaders(incoming: HeaderMap, upstream: UpstreamTarget, options: ForwardOptions): Record<string, string | string[]> {
  const headers = endToEndHeaders(incoming, options.removeHeaders.length ? [...options.removeHeaders, 'host'] : ['host'])
  headers.host = upstream.host
  for (const name in options.setHeaders) headers[name] = options.setHeaders[name] as string
  return headers
}

/** An origin-form request with no target, or one for the server itself: nothing says where it goes. */
function unroutable(request: SourceRequest): SourceAction {
  const message = `Failed to forward "${request.method} ${request.exchange.record?.url ?? request.rawUrl}": it names no upstream (it was sent to this server's own address, and no --target routes it). Send the upstream's own URL through the proxy (HTTP_PROXY), or start with --target URL.`
  return { action: { type: 'respond', status: 400, headers: { 'content-type': 'application/json' }, body: new TextEncoder().encode(JSON.stringify(errorBody('proxy_error', 'ERR_REQUEST_UNROUTABLE', message))) } }
}

class LiveExchange implements UpstreamExchange {
  readonly #request: SourceRequest
  readonly #client: UpstreamClient
  readonly #failures: UpstreamFailures | undefined

  constructor(request: SourceRequest, client: UpstreamClient, failures: UpstreamFailures | undefined) {
    this.#request = request
    this.#client = client
    this.#failures = failures
  }

  forward(options: ForwardOptions): Promise<DispatchedResponse | SourceAction> {
    const request = this.#request
    const upstream = request.upstream
    if (!upstream) return Promise.resolve(unroutable(request))
    const response = new DispatchedResponse()
    // The client left: stop the upstream exchange (its connection is not reused mid-body), unless
    // the flow reads it on after a cut (outliveClient).
    const signal = request.signal
    if (signal.aborted) return Promise.reject(signal.reason)
    const follow = () => response.abort(signal.reason as Error)
    signal.addEventListener('abort', follow, { once: true })
    response.outliveClient = () => {
      signal.removeEventListener('abort', follow)
      return (reason) => response.abort(reason)
    }
    const body = request.takeBody(options.onRequestBody)
    return sendUpstream(this.#client, { origin: upstream.origin, path: upstream.path, method: request.method, headers: forwardHeaders(request.headers, upstream, options), body }, response)
  }

  upstreamFailed(method: string, code: string): string {
    const upstream = this.#request.upstream
    if (!upstream) return this.#request.rawUrl
    return this.#failures?.failed(upstream, method, code) ?? upstream.origin + upstream.path
  }
}

/** `failures`: logs unreachable upstreams and redacts the URL a 502 names (without it, the URL is named as is). */
export function createLiveSource(client: UpstreamClient, failures?: UpstreamFailures): UpstreamSource {
  return {
    kind: 'live',
    begin: (request) => new LiveExchange(request, client, failures),
  }
}
