/**
 * Whether a server of this process still holds the connections it accepted (or a client the
 * connections it opened), once they ended: a WeakRef per socket, then full garbage collections.
 * Whatever is kept per connection (its parser and callbacks, requests, responses, exchanges, read
 * buffers) holds the socket, so a socket collected proves they are all gone.
 */
import diagnostics from 'node:diagnostics_channel'
import type net from 'node:net'
import v8 from 'node:v8'
import vm from 'node:vm'

let gc: (() => void) | null = null

/** A full GC. The flag is set at run time, as Jest's leak detector does, so no test project needs `--expose-gc`. */
export function collectGarbage(): void {
  if (!gc) {
    v8.setFlagsFromString('--expose-gc')
    gc = vm.runInNewContext('gc') as () => void
  }
  gc()
}

export interface TrackedSockets {
  /** Sockets seen since tracking started. */
  readonly count: number
  /** How many of them are closed (destroyed, or already collected). */
  readonly closed: number
  /** Resolves once every socket seen closed (and at least `count` were seen), or rejects after `timeoutMs`. */
  allClosed(count: number, timeoutMs?: number): Promise<void>
  /** How many closed sockets are still referenced after full GCs (retried for `timeoutMs`: frees may wait a turn). Open ones (an idle keep-alive pool) do not count. */
  stillReferenced(timeoutMs?: number): Promise<number>
  stop(): void
}

/**
 * Track the sockets servers of this process accept on `port` (`accepted`, channel
 * `net.server.socket`), or the sockets it connects to `port` (`connected`, `net.client.socket`),
 * holding them only weakly.
 */
export function trackSockets(which: 'accepted' | 'connected', port: number): TrackedSockets {
  const refs: Array<WeakRef<net.Socket>> = []
  // Not a 'close' listener: a CONNECT hands its socket over with its listeners removed.
  const closedCount = () => refs.filter((ref) => ref.deref()?.destroyed !== false).length
  const channel = which === 'accepted' ? 'net.server.socket' : 'net.client.socket'
  const onSocket = (message: unknown) => {
    const socket = (message as { socket: net.Socket }).socket
    if (which === 'accepted') {
      if (socket.localPort === port) refs.push(new WeakRef(socket))
      return
    }
    // Published before it connects: the remote port is known once it did.
    socket.once('connect', function (this: net.Socket) {
      if (this.remotePort === port) refs.push(new WeakRef(this))
    })
  }
  diagnostics.subscribe(channel, onSocket)
  const turn = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
  return {
    get count() {
      return refs.length
    },
    get closed() {
      return closedCount()
    },
    async allClosed(count, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs
      while (refs.length < count || closedCount() < refs.length) {
        if (Date.now() > deadline) throw new Error(`${refs.length} sockets seen (${count} expected), ${closedCount()} closed after ${timeoutMs} ms`)
        await turn(20)
      }
    },
    async stillReferenced(timeoutMs = 5_000) {
      const deadline = Date.now() + timeoutMs
      for (;;) {
        await turn(20)
        collectGarbage()
        const kept = refs.filter((ref) => ref.deref()?.destroyed === true).length
        if (kept === 0 || Date.now() > deadline) return kept
      }
    },
    stop() {
      diagnostics.unsubscribe(channel, onSocket)
    },
  }
}
