/**
 * The error a client sees when its connection is reset, shaped exactly as the real one.
 * Injected failures must look like the real failure on each client.
 */

/** What Node's socket layer raises on a TCP RST while reading. */
export function createConnectionResetError(): NodeJS.ErrnoException {
  return Object.assign(new Error('read ECONNRESET'), { errno: -104, code: 'ECONNRESET', syscall: 'read' })
}

/** What Node's `fetch` rejects with on a TCP RST: `TypeError: fetch failed`, caused by the socket error. */
export function createFetchResetError(): TypeError {
  return new TypeError('fetch failed', { cause: createConnectionResetError() })
}

/** What undici raises when the server closes the connection in the middle of a body. */
export function createSocketClosedError(): Error {
  return Object.assign(new Error('other side closed'), { name: 'SocketError', code: 'UND_ERR_SOCKET' })
}

/**
 * What reading a `fetch` body rejects with when the connection breaks mid-body:
 * `TypeError: terminated`, caused by the socket error (a close by default, or `cause`).
 */
export function createFetchTerminatedError(cause: Error = createSocketClosedError()): TypeError {
  return new TypeError('terminated', { cause })
}
