/**
 * The storm as MSW request handlers, for suites that already use `setupServer`.
 *
 * @example
 * const server = setupServer(...stormHandlers(storm, { tools: [http.post('/ship', shipHandler)] }))
 *
 * Requests go "upstream" to `tools` (MSW handlers that stand in for the tool server; inside
 * them `storm.effect(name, key)` needs no call id) or, when no tool handler answers, to the real
 * network through undici (or to `source`, a cassette). Requests outside `filter` fall through to
 * the next handler and to MSW's `onUnhandledRequest`.
 *
 * msw is an optional peer dependency (2.12 or later, or 3.x), loaded when this is first called.
 *
 * @note A connection reset is answered with MSW's network error (`HttpResponse.error()`), the
 * MSW convention: fetch rejects with `TypeError: Failed to fetch`. `intercept(storm)` produces the
 * exact error a real reset gives (`TypeError: fetch failed`, cause `ECONNRESET`).
 */
import type { RequestHandler } from 'msw'
import { Readable } from 'node:stream'
import type { UserDispatcher } from '../options/user-dispatcher.js'
import type { ExchangeObserver } from '../engine/exchange-flow.js'
import { createServe } from '../engine/serve.js'
import type { ForwardOptions, SourceAction, UpstreamExchange, UpstreamResponse } from '../engine/exchange-transport.js'
import type { UpstreamSource } from '../engine/upstream-source.js'
import { withBody } from '../with-body.js'
import type { Storm } from '../engine/storm.js'
import { fromWebHeaders } from './web-response.js'
import { loadMsw } from './load-msw.js'
import { checkOptions } from '../options/check-options.js'
import { stormHandlerOptionsSchema } from './intercept-options-schema.js'
import { createMswResponseTransport, type MswTransport } from './msw-response-sink.js'
import { fetchRequestHeaders } from './request-headers.js'
import { createUndiciSource } from './undici-source.js'
import { readAll } from '../engine/body.js'
import { transportPlugins, type TransportPluginOptions } from '../options/transport-plugins.js'

export interface StormHandlerOptions extends TransportPluginOptions {
  filter?: (url: URL, method: string) => boolean
  /** MSW handlers that play the tool server. */
  tools?: RequestHandler[]
  dispatcher?: UserDispatcher
  /** Sees every exchange's bytes (a cassette recorder's `observer`). */
  observer?: ExchangeObserver
  /** Where responses come from when no tool handler answers (docs/architecture.md). Default: the real network, through undici. */
  source?: UpstreamSource
}

type GetResponse = ReturnType<typeof loadMsw>['getResponse']

/** `tools` answer first; what they do not answer goes to `next` with the same bytes. */
function toolsSource(tools: RequestHandler[], getResponse: GetResponse, next: UpstreamSource): UpstreamSource {
  return {
    kind: next.kind,
    begin(request, live): UpstreamExchange {
      let passed: UpstreamExchange | null = null
      return {
        propagatesContext: true,
        async forward(options: ForwardOptions): Promise<UpstreamResponse | SourceAction> {
          const taken = request.takeBody(options.onRequestBody)
          const payload = taken ? await readAll(taken) : null
          const headers = fetchRequestHeaders(Object.entries(request.headers).map(([name, value]) => [name, String(value)]), options)
          const mocked = await getResponse(tools, new Request(request.rawUrl, { method: request.method, headers, body: payload }))
          if (mocked) {
            const body = mocked.body ? Readable.fromWeb(mocked.body as import('node:stream/web').ReadableStream<Uint8Array>) : Readable.from([])
            return { status: mocked.status, headers: fromWebHeaders(mocked.headers), body }
          }
          const { onRequestBody: _seen, ...rest } = options
          passed = next.begin(withBody(request, payload), live)
          return passed.forward(rest)
        },
        upstreamFailed: (method, code) => passed?.upstreamFailed?.(method, code) ?? request.rawUrl,
        settle: () => passed?.settle?.(),
      }
    },
  }
}

export function stormHandlers(storm: Storm, options: StormHandlerOptions = {}): RequestHandler[] {
  checkOptions('stormHandlers()', stormHandlerOptionsSchema, options)
  const { getResponse, http, HttpResponse } = loadMsw('storm handlers (stormHandlers)')
  const live = createUndiciSource(options.dispatcher)
  const base = options.source ?? live
  const source = options.tools?.length ? toolsSource(options.tools, getResponse, base) : base
  const serve = createServe(storm, { ...transportPlugins(options, 'stormHandlers()'), observer: options.observer })
  return [
    http.all('*', async ({ request }) => {
      const url = new URL(request.url)
      if (options.filter && !options.filter(url, request.method)) return undefined
      const headers: Record<string, string> = {}
      request.headers.forEach((value, name) => {
        headers[name] = value
      })
      // In-process bodies are read whole anyway: read once, up front, it also names the request (MCP).
      const payload = request.body ? Buffer.from(await request.clone().arrayBuffer()) : null
      let transport: MswTransport | undefined
      let opened: () => void = () => undefined
      const streamOpened = new Promise<void>((resolve) => (opened = resolve))
      const served = serve(
        { method: request.method, url, headers, hasBody: payload !== null },
        {
          readBody: async (limit) => ({ bytes: payload && payload.byteLength <= limit ? payload : null }),
          open(exchange) {
            transport = createMswResponseTransport(request, payload, { exchange, headers, source, live })
            void transport.opened.then(opened)
            return transport
          },
        },
      )
      // A streamed answer (stream faults) is returned as soon as it opens; the flow keeps feeding it.
      if (served) await Promise.race([served, streamOpened])
      return transport?.answer ?? HttpResponse.error()
    }),
  ]
}
