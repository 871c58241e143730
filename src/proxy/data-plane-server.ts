/**
 * The settings every data-plane listener shares: the proxy's own port, and the inner server that
 * serves the requests arriving inside CONNECT tunnels. Same limits, same answers to malformed
 * requests (see http1/wire-server.ts for why this is not node:http).
 */
import { STATUS_CODES } from 'node:http'
import type { Socket } from 'node:net'
import { WireServer } from './http1/wire-server.js'

/** 16 KiB heads, 60 s to send a head, 300 s for a whole request, 5 s keep-alive: WireServer's defaults. */
export function createDataPlaneServer(): WireServer {
  return new WireServer()
}

/** Where a complete response can be written: a node:http response or the wire server's. */
export interface ResponseSink {
  writeHead(status: number, headers: Record<string, string | number | readonly string[] | undefined>): unknown
  write(chunk: Uint8Array): boolean
  end(chunk?: Uint8Array | string): unknown
  once(event: 'drain', listener: () => void): unknown
}

/** Answer parser errors of the admin server (node:http) without ever reaching the upstream. */
export function answerClientError(error: NodeJS.ErrnoException, socket: Socket): void {
  if (error.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy()
    return
  }
  const status = error.code === 'HPE_HEADER_OVERFLOW' ? 431 : error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400
  socket.end(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nconnection: close\r\ncontent-length: 0\r\n\r\n`)
}

/** A proxy-level refusal (not an injected fault): JSON with the `[toolstorm]` prefix. */
export function sendProxyError(res: ResponseSink, status: number, message: string): void {
  const body = JSON.stringify({ error: { type: 'proxy_error', message: `[toolstorm] ${message}` } })
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) })
  res.end(body)
}
