/**
 * The socket transport: carries out the exchange flow's effects on a `node:http` request and
 * response. Bodies stream both ways; nothing is buffered unless a fault asks for the whole body.
 *
 * @note Hand-written on node:http + undici rather than http-proxy-3: `response_lost` must let the
 * upstream answer completely and then reset the client's TCP connection, and faults must act
 * between the phases of one exchange; a proxy library owns those phases and hides the sockets.
 */
import type http from 'node:http'
import { pipeline } from 'node:stream/promises'
import type { Dispatcher } from 'undici'
import type { ExchangeTransport, ForwardOptions, UpstreamResponse } from '../engine/exchange-flow.js'
import { endToEndHeaders } from './hop-by-hop.js'
import { resetOrDestroy } from './reset-socket.js'

/** Methods whose requests never carry a body unless they say so. */
function hasRequestBody(req: http.IncomingMessage): boolean {
  const length = req.headers['content-length']
  if (length !== undefined) return length !== '0'
  return req.headers['transfer-encoding'] !== undefined
}

export function createProxyTransport(req: http.IncomingMessage, res: http.ServerResponse, upstream: URL, dispatcher: Dispatcher): ExchangeTransport {
  // Captured now: `req.socket` is detached once the request body has been consumed.
  const socket = req.socket
  const controller = new AbortController()
  res.once('close', () => {
    if (!res.writableFinished) controller.abort(new Error('The client closed the connection.'))
  })

  return {
    signal: controller.signal,

    async forward(options: ForwardOptions): Promise<UpstreamResponse> {
      const headers = endToEndHeaders(req.headers, [...options.removeHeaders, 'host'])
      headers.host = upstream.host
      for (const name in options.setHeaders) headers[name] = options.setHeaders[name] as string
      const response = await dispatcher.request({
        origin: upstream.origin,
        path: upstream.pathname + upstream.search,
        method: (req.method ?? 'GET') as Dispatcher.HttpMethod,
        headers,
        body: hasRequestBody(req) ? req : null,
        signal: controller.signal,
      })
      return { status: response.statusCode, headers: response.headers, body: response.body }
    },

    async respond({ status, headers, body }) {
      if (res.headersSent || res.destroyed) return
      const out: Record<string, string | number> = { ...headers }
      out['content-length'] = body?.length ?? 0
      res.writeHead(status, out)
      res.end(req.method === 'HEAD' ? undefined : body ?? undefined)
      await finished(res)
    },

    async relay(upstream) {
      if (res.destroyed) {
        ;(upstream.body as { destroy?: () => void }).destroy?.()
        return
      }
      res.writeHead(upstream.status, endToEndHeaders(upstream.headers))
      try {
        await pipeline(upstream.body, res)
      } catch (error) {
        // The upstream died mid-body: the client must see a broken connection, never a clean end.
        resetOrDestroy(socket)
        throw error
      }
    },

    reset() {
      resetOrDestroy(socket)
      ;(req as { resume?: () => void }).resume?.()
    },
  }
}

function finished(res: http.ServerResponse): Promise<void> {
  if (res.writableFinished || res.destroyed) return Promise.resolve()
  return new Promise((resolve) => {
    const done = () => resolve()
    res.once('finish', done)
    res.once('close', done)
  })
}
