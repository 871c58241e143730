/**
 * The proxy's `ResponseWriter`: a response written piece by piece to a client socket, for stream
 * faults and for the replay server's recorded streams (one cut, one backpressure for both).
 * Backpressure is the socket's; a cut closes the socket without the terminal chunk.
 */
import type { Socket } from 'node:net'
import type { ResponseWriter } from '../../engine/streams/response-writer.js'
import type { OutgoingHeaders, WireResponse } from '../http1/wire-response.js'
import { resetOrDestroy } from './reset-socket.js'

/** After a cut, a client that keeps its side open is disconnected after this long. */
const HALF_OPEN_GRACE_MS = 1_000

export function createProxyResponseWriter(res: WireResponse, socket: Socket, status: number, headers: OutgoingHeaders, closed: AbortSignal): ResponseWriter {
  if (!res.headersSent && !res.destroyed) {
    res.writeHead(status, headers)
    // The head goes out now, as the upstream sent it, even if no body byte follows (a stall).
    res.flushHeaders()
  }
  return {
    closed,
    write(bytes) {
      if (closed.aborted || res.destroyed) return Promise.reject(closed.reason ?? new Error('The client closed the connection.'))
      if (res.write(bytes)) return Promise.resolve()
      return new Promise<void>((resolve, reject) => {
        const done = () => {
          res.off('drain', done)
          closed.removeEventListener('abort', gone)
          resolve()
        }
        const gone = () => {
          res.off('drain', done)
          reject(closed.reason)
        }
        res.once('drain', done)
        closed.addEventListener('abort', gone, { once: true })
      })
    },
    end() {
      if (!res.destroyed) res.end()
    },
    abort() {
      // Half-close after what was written is flushed: no terminal chunk ever follows, so the
      // client reads an incomplete body ("other side closed" in undici, "aborted" in node:http).
      if (socket.destroyed) return
      socket.end()
      setTimeout(() => socket.destroy(), HALF_OPEN_GRACE_MS).unref()
    },
    reset() {
      resetOrDestroy(socket)
    },
  }
}
