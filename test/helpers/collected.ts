/**
 * Whether a server of this process still holds the connections it accepted, once they ended: a
 * WeakRef per accepted socket, then full garbage collections. Whatever a server keeps per
 * connection (its parser and callbacks, requests, responses, exchanges) holds the socket, so a
 * socket collected proves they are all gone.
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

export interface AcceptedSockets {
  /** Sockets accepted on the port since `trackAccepted`. */
  readonly accepted: number
  /** How many of them are closed (destroyed, or already collected). */
  readonly closed: number
  /** Resolves once every accepted socket closed (and at least `count` were accepted), or rejects after `timeoutMs`. */
  allClosed(count: number, timeoutMs?: number): Promise<void>
  /** How many accepted sockets are still referenced after full GCs (retried for `timeoutMs`: frees may wait a turn). */
  stillReferenced(timeoutMs?: number): Promise<number>
  stop(): void
}

/** Track the sockets servers of this process accept on `port` (channel `net.server.socket`), holding them only weakly. */
export function trackAccepted(port: number): AcceptedSockets {
  const refs: Array<WeakRef<net.Socket>> = []
  // Not a 'close' listener: a CONNECT hands its socket over with its listeners removed.
  const closedCount = () => refs.filter((ref) => ref.deref()?.destroyed !== false).length
  const onSocket = (message: unknown) => {
    const socket = (message as { socket: net.Socket }).socket
    if (socket.localPort === port) refs.push(new WeakRef(socket))
  }
  diagnostics.subscribe('net.server.socket', onSocket)
  const turn = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
  return {
    get accepted() {
      return refs.length
    },
    get closed() {
      return closedCount()
    },
    async allClosed(count, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs
      while (refs.length < count || closedCount() < refs.length) {
        if (Date.now() > deadline) throw new Error(`${refs.length} sockets accepted (${count} expected), ${closedCount()} closed after ${timeoutMs} ms`)
        await turn(20)
      }
    },
    async stillReferenced(timeoutMs = 5_000) {
      const deadline = Date.now() + timeoutMs
      for (;;) {
        await turn(20)
        collectGarbage()
        const alive = refs.filter((ref) => ref.deref() !== undefined).length
        if (alive === 0 || Date.now() > deadline) return alive
      }
    },
    stop() {
      diagnostics.unsubscribe('net.server.socket', onSocket)
    },
  }
}
