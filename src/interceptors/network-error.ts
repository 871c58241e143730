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
