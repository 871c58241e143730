/**
 * The settings every data-plane listener shares: the proxy's own port, and the inner server that
 * serves the requests arriving inside CONNECT tunnels. Same limits, same answers to malformed
 * requests (see http1/wire-server.ts for why this is not node:http).
 */
import { errorBody } from '../error-body.js'
import type { ErrorCode } from '../errors.js'
import { printExchangeFailure, reportFailure, type ExchangeErrorReporter } from './exchange-failure.js'
import type { WireRequest } from './http1/wire-request.js'
import type { WireResponse } from './http1/wire-response.js'
import { WireServer } from './http1/wire-server.js'

/**
 * 16 KiB heads, 60 s to send a head, 300 s for a whole request, 5 s keep-alive: WireServer's
 * defaults. An exception that escapes one exchange fails that exchange only (failExchange).
 */
export function createDataPlaneServer(report: ExchangeErrorReporter = printExchangeFailure): WireServer {
  const server = new WireServer()
  server.on('exchangeError', (error, req, res) => failExchange(report, error, req, res))
  return server
}

/**
 * An exchange threw: report it once, and answer its client 500 with the code if no response
 * started (a started one is cut off: the client sees the connection close, never a clean end).
 */
export function failExchange(report: ExchangeErrorReporter, error: unknown, req: WireRequest | null, res: WireResponse | null): void {
  const failure = reportFailure(report, error, req ? `"${req.method} ${req.url}"` : 'a request')
  if (!res || res.writableFinished) return
  if (res.headersSent || res.destroyed) {
    res.destroy()
    return
  }
  res.keepAlive = false
  const body = JSON.stringify(errorBody('proxy_error', failure.code, `The proxy failed while serving this request (${failure.code}); see its log.`))
  res.writeHead(500, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) })
  res.end(body)
}

/** Where a complete response can be written: a node:http response or the wire server's. */
export interface ResponseSink {
  writeHead(status: number, headers: Record<string, string | number | readonly string[] | undefined>): unknown
  write(chunk: Uint8Array): boolean
  end(chunk?: Uint8Array | string): unknown
  once(event: 'drain', listener: () => void): unknown
}

/** Answer parser errors of the admin server (node:http): admin-http-server.ts, light for `toolstorm mcp`'s start. */
export { answerClientError } from './admin/admin-http-server.js'

/** A proxy-level refusal (not an injected fault): the error body, its message with the `[toolstorm]` prefix. */
export function sendProxyError(res: ResponseSink, status: number, code: ErrorCode, message: string): void {
  const body = JSON.stringify(errorBody('proxy_error', code, message))
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) })
  res.end(body)
}
