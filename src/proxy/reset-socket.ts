/**
 * Reset a connection so the peer sees ECONNRESET (a TCP RST), the way a dead server does.
 * @note `resetAndDestroy()` exists on plain TCP sockets; TLS sockets (and sockets already
 * closing) fall back to `destroy()`, which the peer sees as a close.
 */
import type { Socket } from 'node:net'

export function resetOrDestroy(socket: Socket | null | undefined): void {
  if (!socket || socket.destroyed) return
  const reset = (socket as Socket & { resetAndDestroy?: () => Socket }).resetAndDestroy
  if (typeof reset === 'function' && (socket as { _handle?: unknown })._handle) {
    try {
      reset.call(socket)
      return
    } catch {
      // The handle cannot reset (for example a TLS-wrapped socket); destroy instead.
    }
  }
  socket.destroy()
}
