/**
 * The socket transport for requests the replay server forwards (`update` and
 * `passthrough-unmatched` modes): like the proxy's, except that the request body was already
 * read (replay had to compare it first), so it is sent from a buffer. Stream faults write through
 * the proxy's response writer.
 */
import { Readable } from 'node:stream'
import type { ExchangeTransport, ForwardOptions, UpstreamResponse } from '../engine/exchange-transport.js'
import type { HeaderMap } from '../engine/faults/fault.js'
import type { ResponseWriter } from '../engine/streams/response-writer.js'
import { relayToClient, sendComplete } from '../proxy/client-replies.js'
import { endToEndHeaders } from '../proxy/hop-by-hop.js'
import type { WireRequest } from '../proxy/http1/wire-request.js'
import type { WireResponse } from '../proxy/http1/wire-response.js'
import { createProxyResponseWriter } from '../proxy/proxy-response-writer.js'
import { resetOrDestroy } from '../proxy/reset-socket.js'
import type { Upstream } from '../proxy/targets.js'
import type { UpstreamClient } from '../proxy/upstream-client.js'
import type { UpstreamFailures } from '../proxy/upstream-failures.js'
import { DispatchedResponse, sendUpstream } from '../proxy/upstream-dispatch.js'

const CLIENT_GONE = new Error('The client closed the connection.')

export function createBufferedTransport(req: WireRequest, res: WireResponse, body: Buffer | null, upstream: Upstream, client: UpstreamClient, failures?: UpstreamFailures): ExchangeTransport {
  const controller = new AbortController()
  const socket = req.socket
  let response: DispatchedResponse | null = null
  res.once('close', () => {
    if (res.writableFinished) return
    controller.abort(CLIENT_GONE)
    response?.abort(CLIENT_GONE)
  })
  return {
    signal: controller.signal,

    async forward(options: ForwardOptions): Promise<UpstreamResponse> {
      if (controller.signal.aborted) throw CLIENT_GONE
      const headers = endToEndHeaders(req.headers, [...options.removeHeaders, 'host'])
      headers.host = upstream.host
      for (const [name, value] of Object.entries(options.setHeaders)) headers[name] = value
      if (body && body.length) options.onRequestBody?.(body)
      options.onRequestBody?.(null)
      response = new DispatchedResponse()
      return sendUpstream(client, { origin: upstream.origin, path: upstream.path, method: req.method, headers, body: body && body.length ? Readable.from([body]) : null }, response)
    },

    async respond(reply) {
      sendComplete(res, req.method, reply)
    },

    async relay(upstreamResponse: UpstreamResponse) {
      await relayToClient(res, socket, upstreamResponse, controller.signal)
    },

    upstreamFailed(method, code) {
      return failures?.failed(upstream, method, code) ?? upstream.origin + upstream.path
    },

    reset() {
      resetOrDestroy(socket)
    },

    // Stream faults (stream_cut, drop_terminal, …) write through this, as in the proxy.
    open(status: number, headers: HeaderMap): ResponseWriter {
      return createProxyResponseWriter(res, socket, status, endToEndHeaders(headers), controller.signal)
    },
  }
}
