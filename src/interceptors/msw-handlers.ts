/**
 * The storm as MSW request handlers, for suites that already use `setupServer`.
 *
 * @example
 * const server = setupServer(...stormHandlers(storm, { tools: [http.post('/ship', shipHandler)] }))
 *
 * Requests go "upstream" to `tools` (MSW handlers that stand in for the tool server; inside
 * them `storm.effect(name, key)` needs no call id) or, when no tool handler answers, to the real
 * network through undici. Requests outside `filter` fall through to the next handler and to
 * MSW's `onUnhandledRequest`.
 *
 * msw is an optional peer dependency (2.12 or later, or 3.x), loaded when this is first called.
 *
 * @note A connection reset is answered with MSW's network error (`HttpResponse.error()`), the
 * MSW convention: fetch rejects with `TypeError: Failed to fetch`. `intercept(storm)` produces the
 * exact error a real reset gives (`TypeError: fetch failed`, cause `ECONNRESET`).
 */
import type { RequestHandler } from 'msw'
import { Readable } from 'node:stream'
import { request as undiciRequest, type Dispatcher } from 'undici'
import { runExchange, type ExchangeObserver } from '../engine/exchange-flow.js'
import type { ExchangeTransport, UpstreamResponse } from '../engine/exchange-transport.js'
import type { ResponseWriter } from '../engine/streams/response-writer.js'
import type { Storm } from '../engine/storm.js'
import { fromWebHeaders, toWebResponse } from '../engine/web-response.js'
import { loadMsw } from './load-msw.js'
import { forwardHeaders } from './request-headers.js'
import { openStreamResponse } from './stream-response-writer.js'
import { withMcpEvidence } from '../engine/mcp/mcp-observer.js'
import { fetchMcpRequest } from './fetch-mcp-request.js'

export interface StormHandlerOptions {
  filter?: (url: URL, method: string) => boolean
  /** MSW handlers that play the tool server. */
  tools?: RequestHandler[]
  dispatcher?: Dispatcher
  /** Sees every exchange's bytes (a cassette recorder's `observer`). */
  observer?: ExchangeObserver
}

export function stormHandlers(storm: Storm, options: StormHandlerOptions = {}): RequestHandler[] {
  const { getResponse, http, HttpResponse } = loadMsw('storm handlers (stormHandlers)')
  const observer = withMcpEvidence(options.observer)
  return [
    http.all('*', async ({ request }) => {
      const url = new URL(request.url)
      if (options.filter && !options.filter(url, request.method)) return undefined
      const headers: Record<string, string> = {}
      request.headers.forEach((value, name) => {
        headers[name] = value
      })
      const pending = fetchMcpRequest(storm, request, url, headers)
      const mcp = pending && (await pending)
      const exchange = storm.begin({ method: request.method, url, headers, mcp })
      let answer: Response | undefined
      const payload = request.body ? Buffer.from(await request.clone().arrayBuffer()) : null
      // A streamed answer (stream faults) is returned as soon as it opens; the flow keeps feeding it.
      let opened: () => void = () => undefined
      const open = new Promise<void>((resolve) => (opened = resolve))
      let writer: ResponseWriter | null = null

      const transport: ExchangeTransport = {
        signal: request.signal,
        propagatesContext: true,
        async forward(forward): Promise<UpstreamResponse> {
          const outgoing = forwardHeaders(request.headers.entries(), forward)
          if (payload && payload.length) forward.onRequestBody?.(payload)
          forward.onRequestBody?.(null)
          if (options.tools?.length) {
            const mocked = await getResponse(options.tools, new Request(request.url, { method: request.method, headers: outgoing, body: payload }))
            if (mocked) {
              const body = mocked.body ? Readable.fromWeb(mocked.body as import('node:stream/web').ReadableStream<Uint8Array>) : Readable.from([])
              return { status: mocked.status, headers: fromWebHeaders(mocked.headers), body }
            }
          }
          const response = await undiciRequest(request.url, {
            method: request.method as Dispatcher.HttpMethod,
            headers: payload ? { ...outgoing, 'content-length': String(payload.length) } : outgoing,
            body: payload,
            signal: request.signal,
            ...(options.dispatcher ? { dispatcher: options.dispatcher } : {}),
          })
          return { status: response.statusCode, headers: response.headers, body: response.body }
        },
        async respond({ status, headers: responseHeaders, body }) {
          answer = toWebResponse(status, responseHeaders, body as Uint8Array<ArrayBuffer> | null)
        },
        async relay(upstream) {
          answer = toWebResponse(upstream.status, upstream.headers, Readable.toWeb(Readable.from(upstream.body)) as unknown as ReadableStream<Uint8Array>)
        },
        reset() {
          if (writer) return writer.reset()
          answer = HttpResponse.error()
        },
        open(status, responseHeaders) {
          writer = openStreamResponse((body) => {
            answer = toWebResponse(status, responseHeaders, body)
            opened()
          }, request.signal)
          return writer
        },
      }
      await Promise.race([runExchange(exchange, transport, observer), open])
      return answer ?? HttpResponse.error()
    }),
  ]
}
