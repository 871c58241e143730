/** The admin API's HTTP server with its limits, before any route is attached, and its token: light (node:http), as `toolstorm mcp` binds it first thing. */
import http, { STATUS_CODES } from 'node:http'
import type { Socket } from 'node:net'
import { randomBytes } from 'node:crypto'
import { ConfigError } from '../../errors.js'

export function createAdminHttpServer(): http.Server {
  return http.createServer({ maxHeaderSize: 16 * 1024, requestTimeout: 60_000, headersTimeout: 30_000 })
}

/** A random admin token, or the one given (at least 16 characters). */
export function adminToken(given: string | undefined, selfName: string): string {
  if (given !== undefined && given.length < 16) throw new ConfigError(`Failed to start the ${selfName}: --admin-token must be at least 16 characters.`, { code: 'ERR_USAGE' })
  return given ?? randomBytes(24).toString('base64url')
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
