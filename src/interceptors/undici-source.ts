/**
 * The in-process live source: an intercepted request goes to its upstream with npm undici, which
 * bypasses the interceptors (it neither uses global fetch nor `http.ClientRequest`), so a
 * forwarded request is never intercepted again. `dispatcher`: the user's, else undici's global one.
 */
import { request as undiciRequest, type Dispatcher } from 'undici'
import type { ForwardOptions, UpstreamExchange, UpstreamResponse } from '../engine/exchange-transport.js'
import { readAll } from '../engine/body.js'
import type { SourceRequest, UpstreamSource } from '../engine/upstream-source.js'
import { asDispatcher, type UserDispatcher } from '../options/user-dispatcher.js'
import { fetchRequestHeaders } from './request-headers.js'

/** The request's headers as a list, for `fetchRequestHeaders`. */
function entries(request: SourceRequest): Array<[string, string]> {
  const list: Array<[string, string]> = []
  for (const [name, value] of Object.entries(request.headers)) if (value !== undefined) list.push([name, Array.isArray(value) ? value.join(', ') : value])
  return list
}

/** `origin` and `path` (with the query) of an absolute URL, as a dispatcher's `request()` takes them. */
function originAndPath(url: string): { origin: string; path: string } {
  const parsed = new URL(url)
  return { origin: parsed.origin, path: parsed.pathname + parsed.search }
}

class UndiciExchange implements UpstreamExchange {
  readonly propagatesContext = true
  readonly #request: SourceRequest
  readonly #dispatcher: Dispatcher | undefined

  constructor(request: SourceRequest, dispatcher: Dispatcher | undefined) {
    this.#request = request
    this.#dispatcher = dispatcher
  }

  async forward(options: ForwardOptions): Promise<UpstreamResponse> {
    const request = this.#request
    const headers = fetchRequestHeaders(entries(request), options)
    const body = request.takeBody(options.onRequestBody)
    // In-process bodies are read whole anyway (an intercepted Request's body is read once).
    const payload = body ? await readAll(body) : null
    if (payload) headers['content-length'] = String(payload.length)
    const upstream = request.upstream
    const url = upstream ? upstream.origin + upstream.path : request.rawUrl
    // The upstream follows the client's signal until the flow reads it on after a cut (outliveClient).
    const client = request.signal
    const upstreamSignal = new AbortController()
    const follow = () => upstreamSignal.abort(client.reason)
    if (client.aborted) follow()
    else client.addEventListener('abort', follow, { once: true })
    const method = request.method as Dispatcher.HttpMethod
    const signal = upstreamSignal.signal
    // A dispatcher of the user's goes through its own `request()`: it may come from another major of
    // undici than ours (users bring undici 8, Node 26 bundles it), and undici 8's dispatchers refuse
    // the `dispatcher` field our top-level `request()` leaves in what it hands them.
    const response = this.#dispatcher
      ? await this.#dispatcher.request({ ...originAndPath(url), method, headers, body: payload, signal })
      : await undiciRequest(url, { method, headers, body: payload, signal })
    const outliveClient = () => {
      client.removeEventListener('abort', follow)
      return (reason: Error) => upstreamSignal.abort(reason)
    }
    return { status: response.statusCode, headers: response.headers, body: response.body, outliveClient }
  }
}

export function createUndiciSource(users?: UserDispatcher): UpstreamSource {
  const dispatcher = users ? asDispatcher(users) : undefined
  return {
    kind: 'live',
    begin: (request) => new UndiciExchange(request, dispatcher),
  }
}
