/**
 * The `node:http` settings every data-plane listener shares: the proxy's own port, and the inner
 * server that serves the requests arriving inside CONNECT tunnels. Same limits, same answers to
 * malformed requests.
 */
import http, { STATUS_CODES } from 'node:http'
import type { Socket } from 'node:net'

export function createDataPlaneServer(): http.Server {
  const server = http.createServer({
    maxHeaderSize: 16 * 1024,
    requestTimeout: 300_000,
    headersTimeout: 60_000,
    keepAliveTimeout: 5_000,
    insecureHTTPParser: false,
  })
  server.on('clientError', answerClientError)
  return server
}

/** Answer parser errors (llhttp rejects) without ever reaching the upstream. */
export function answerClientError(error: NodeJS.ErrnoException, socket: Socket): void {
  if (error.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy()
    return
  }
  const status = error.code === 'HPE_HEADER_OVERFLOW' ? 431 : error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400
  socket.end(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nconnection: close\r\ncontent-length: 0\r\n\r\n`)
}

/** A proxy-level refusal (not an injected fault): JSON with the `[toolstorm]` prefix. */
export function sendProxyError(res: http.ServerResponse, status: number, message: string): void {
  const body = JSON.stringify({ error: { type: 'proxy_error', message: `[toolstorm] ${message}` } })
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) })
  res.end(body)
}
