/**
 * Reset a connection so the peer sees ECONNRESET (a TCP RST), the way a dead server does.
 * @note `resetAndDestroy()` exists on plain TCP sockets. A TLS socket cannot reset its own
 * handle, so an intercepted HTTPS connection registers the TCP socket it runs on
 * (`setResetTarget`) and that one is reset. Other sockets fall back to `destroy()`, which the
 * peer sees as a close.
 *
 * A socket whose FIN is on its way (`end()` was called, the shutdown not finished) cannot be reset:
 * libuv refuses (EINVAL) and Node then leaves the handle half-closed for good, so the socket never
 * emits 'close' and the process spins at exit waiting for it (#31). Such a socket is destroyed:
 * its peer, which half-closed first or was told the connection ends, sees the close.
 */
import type { Socket } from 'node:net'

/** The TCP socket under a TLS socket terminated by the proxy. */
const resetTargets = new WeakMap<Socket, Socket>()

/** Make `resetOrDestroy(outer)` reset `tcp`, the TCP socket `outer` (a TLS socket) runs on. */
export function setResetTarget(outer: Socket, tcp: Socket): void {
  resetTargets.set(outer, tcp)
}

export function resetOrDestroy(socket: Socket | null | undefined): void {
  if (!socket || socket.destroyed) return
  const target = resetTargets.get(socket) ?? socket
  if (target.writableEnded && !target.writableFinished) {
    socket.destroy()
    if (target !== socket) target.destroy()
    return
  }
  const reset = (target as Socket & { resetAndDestroy?: () => Socket }).resetAndDestroy
  if (typeof reset === 'function' && !target.destroyed && (target as { _handle?: unknown })._handle) {
    try {
      reset.call(target)
      if (target !== socket) socket.destroy()
      return
    } catch {
      // The handle cannot reset (for example a TLS-wrapped socket); destroy instead.
    }
  }
  socket.destroy()
}
