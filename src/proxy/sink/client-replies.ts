/**
 * How a socket transport answers its client once the exchange flow has decided: with a complete
 * response (a fault's, or the proxy's own), or with the upstream's response relayed. The proxy
 * and the replay server's pass-through share both.
 */
import type { Socket } from 'node:net'
import type { UpstreamResponse } from '../../engine/exchange-transport.js'
import { endToEndHeaders } from '../hop-by-hop.js'
import type { WireResponse } from '../http1/wire-response.js'
import { createProxyResponseWriter } from './proxy-response-writer.js'
import { resetOrDestroy } from './reset-socket.js'
import { DispatchedResponse } from '../upstream/upstream-dispatch.js'

export interface CompleteReply {
  readonly status: number
  readonly headers: Record<string, string>
  readonly body: Uint8Array | null
}

/** A whole response with its length (no body for HEAD); nothing if the client already got a head or left. */
export function sendComplete(res: WireResponse, method: string, { status, headers, body }: CompleteReply): void {
  if (res.headersSent || res.destroyed) return
  res.writeHead(status, { ...headers, 'content-length': body?.length ?? 0 })
  res.end(method === 'HEAD' ? undefined : body ?? undefined)
}

/** Relay the upstream's response; if its body breaks off, the client sees a broken connection, never a clean end. */
export async function relayToClient(res: WireResponse, socket: Socket, upstream: UpstreamResponse, closed: AbortSignal): Promise<void> {
  if (res.destroyed) return
  try {
    if (upstream instanceof DispatchedResponse) await upstream.relayTo(res, endToEndHeaders(upstream.headers))
    else {
      // A body not read by sendUpstream (the socket transports' own responses all are; a fault
      // that rewrites a body answers with respond() instead): written as it comes, at the socket's pace.
      const writer = createProxyResponseWriter(res, socket, upstream.status, endToEndHeaders(upstream.headers), closed)
      for await (const chunk of upstream.body) await writer.write(chunk)
      writer.end()
    }
  } catch (error) {
    resetOrDestroy(socket)
    throw error
  }
}
