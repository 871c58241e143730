/**
 * The two servers every toolstorm process runs, a data plane and an admin API on its own port:
 * how they start listening together and how they stop (the proxy and the replay server share it).
 */
import type { AddressInfo } from 'node:net'
import { listenError } from '../errors.js'

/** What both kinds of server (node:http for admin APIs, the wire server for data planes) offer. */
export interface PairedServer {
  listen(port: number, host: string, callback: () => void): unknown
  address(): AddressInfo | string | null
  once(event: 'error', listener: (error: Error) => void): unknown
  off(event: 'error', listener: (error: Error) => void): unknown
  close(callback?: (error?: Error) => void): unknown
  closeIdleConnections(): void
  closeAllConnections(): void
}

export const LOOPBACK = new Set(['127.0.0.1', 'localhost', '::1'])

/** In-flight exchanges get this long to finish on close; then their sockets are closed. */
const CLOSE_GRACE_MS = 2_000

export function formatOrigin(host: string, port: number): string {
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}`
}

/** Listen on `host:port`; a refusal is a typed error naming the server's role. */
export function listenServer(server: PairedServer, port: number, host: string, role: 'data' | 'admin'): Promise<AddressInfo> {
  return new Promise((resolve, reject) => {
    const fail = (error: Error) => reject(listenError(error, { host, port, server: role }) as Error)
    server.once('error', fail)
    server.listen(port, host, () => {
      server.off('error', fail)
      resolve(server.address() as AddressInfo)
    })
  })
}

export interface ListeningPair {
  readonly address: AddressInfo
  readonly adminAddress: AddressInfo
  /** `host:port` of the data plane, as a request's Host header names it. */
  readonly self: string
}

/** Listen on both ports; when the admin port is refused, the data plane is closed again. */
export async function listenPair(server: PairedServer, admin: PairedServer, host: string, port: number, adminPort: number): Promise<ListeningPair> {
  const address = await listenServer(server, port, host, 'data')
  let adminAddress: AddressInfo
  try {
    adminAddress = await listenServer(admin, adminPort, host, 'admin')
  } catch (error) {
    server.close()
    throw error
  }
  return { address, adminAddress, self: `${host.includes(':') ? `[${host}]` : host}:${address.port}` }
}

/** What owns the sockets of CONNECT tunnels (they are not the servers'). */
interface TunnelSockets {
  close(): void
  destroyAll(): void
}

/** Stop accepting, let in-flight exchanges finish within the grace period, then close what is left. */
export function closePair(server: PairedServer, admin: PairedServer, tunnels: TunnelSockets | null): Promise<void> {
  return closeServers([server, admin], tunnels)
}

/** `closePair` for any number of servers (an admin API alone: `toolstorm mcp`). */
export async function closeServers(servers: readonly PairedServer[], tunnels: TunnelSockets | null): Promise<void> {
  const stopped = Promise.all(servers.map((server) => new Promise<void>((resolve) => server.close(() => resolve()))))
  for (const server of servers) server.closeIdleConnections()
  tunnels?.close()
  // Not unref'd: what is left may be sockets that no longer read (the client's FIN was seen) and
  // whose timeouts are unref'd; then the event loop empties, `stopped` never settles, and a CLI
  // awaiting it exits 13 without its verdict. The grace is what ends the wait, so it keeps the process alive.
  const grace = setTimeout(() => {
    for (const server of servers) server.closeAllConnections()
    tunnels?.destroyAll()
  }, CLOSE_GRACE_MS)
  await stopped
  clearTimeout(grace)
}
