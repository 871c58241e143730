/**
 * CONNECT in forward mode: how HTTPS (and plain HTTP tunnelled through CONNECT) reaches the storm.
 *
 * 1. Refuse a malformed target (400), the proxy's own ports (403) and ports outside the allowlist
 *    (403): 443 plus the configured ones.
 * 2. A target no rule cares about, with `intercept` saying so, is tunnelled untouched (raw TCP).
 * 3. Otherwise answer `200 Connection Established` and look at the first byte the client sends.
 *    0x16 (a TLS handshake record): terminate TLS with a leaf for the CONNECT host, signed by the
 *    CA. Anything else: plain HTTP (undici's ProxyAgent tunnels `http://` URLs this way).
 * 4. Either way the connection is handed to an inner HTTP server whose requests go through
 *    `serve`, the data plane's own request path (`storm.begin` + `runExchange`), with the
 *    upstream `https://<connect host>:<port>` (or `http://`). Faults, effects and reports work
 *    exactly as for plain forward-mode requests.
 *
 * @note Requests are routed by the CONNECT target, never by their Host header: a client cannot
 * reach another upstream than the one it opened the tunnel to.
 * @see docs/https.md
 */
import { STATUS_CODES } from 'node:http'
import net from 'node:net'
import type { Duplex } from 'node:stream'
import tls from 'node:tls'
import { createDataPlaneServer, sendProxyError } from '../data-plane-server.js'
import type { ExchangeErrorReporter } from '../exchange-failure.js'
import type { WireRequest } from '../http1/wire-request.js'
import type { WireResponse } from '../http1/wire-response.js'
import { setResetTarget } from '../sink/reset-socket.js'
import type { Upstream } from '../targets.js'
import { proxyCredentialsRun } from '../run-address.js'
import { parseConnectTarget, type ConnectTarget } from './connect-target.js'
import type { LeafCertificates } from './leaf-certificates.js'

/** CONNECT always may reach port 443; other ports only when configured. */
export const DEFAULT_CONNECT_PORT = 443
/** Time a client has, once the tunnel is open, to send its first byte and finish its TLS handshake. */
const HANDSHAKE_TIMEOUT_MS = 30_000
/** Time to reach the real host of an untouched tunnel. */
const TUNNEL_CONNECT_TIMEOUT_MS = 10_000
/** The first byte of every TLS connection: a handshake record (RFC 8446 §5.1). */
const TLS_HANDSHAKE_RECORD = 0x16
/** TLS alerts by which a client says it does not trust the certificate it was shown. */
const REFUSED_CERTIFICATE_CODES: Readonly<Record<string, string>> = {
  ERR_SSL_TLSV1_ALERT_UNKNOWN_CA: 'unknown CA',
  ERR_SSL_SSLV3_ALERT_BAD_CERTIFICATE: 'bad certificate',
  ERR_SSL_SSLV3_ALERT_CERTIFICATE_UNKNOWN: 'certificate unknown',
}

export interface ConnectHandlerOptions {
  /** Signs and caches a leaf per host. */
  readonly leaves: LeafCertificates
  /** Ports CONNECT may reach besides 443. */
  readonly connectPorts?: readonly number[]
  /** The proxy's own ports (data plane, admin API): never reachable through CONNECT, whatever the host name. */
  readonly ownPorts: ReadonlySet<string>
  /** Whether to intercept a target; when false it is tunnelled untouched. Default: intercept everything. */
  readonly intercept?: (host: string, port: number) => boolean
  /** Serve one request that arrived inside a tunnel: the data plane's request path (`run`: the one the CONNECT's proxy credentials named). */
  readonly serve: (req: WireRequest, res: WireResponse, upstream: Upstream, clientUrl: URL, run: string | undefined) => void
  /** Where an exchange that threw inside a tunnel is reported (see exchange-failure.ts). */
  readonly report?: ExchangeErrorReporter
  /** A client refused the leaf during the handshake (it does not trust the CA). */
  readonly onCertificateRefused?: (host: string, reason: string) => void
}

export interface ConnectHandler {
  /** The `connect` listener for the data-plane server. */
  readonly listener: (req: WireRequest, socket: Duplex, head: Buffer) => void
  /** Refuse new tunnels and close idle ones; requests in flight may finish. */
  close(): void
  /** Destroy every tunnel still open. */
  destroyAll(): void
}

interface Tunnel {
  readonly target: ConnectTarget
  readonly secure: boolean
  /** The run the CONNECT's `Proxy-Authorization` named: requests inside the tunnel carry no proxy credentials of their own. */
  readonly run: string | undefined
}

const ignore = () => undefined

function leftEarly(this: net.Socket): void {
  this.destroy()
}

/**
 * @example
 * const connect = createConnectHandler({ leaves: new LeafCertificates(ca), ownPorts, serve })
 * server.on('connect', connect.listener)
 */
export function createConnectHandler(options: ConnectHandlerOptions): ConnectHandler {
  const allowedPorts = new Set([DEFAULT_CONNECT_PORT, ...(options.connectPorts ?? [])])
  const tunnels = new WeakMap<net.Socket, Tunnel>()
  const open = new Set<net.Socket>()
  let closing = false

  // This server never listens: the sockets of tunnels are handed to it.
  const inner = createDataPlaneServer(options.report)
  inner.on('request', (req, res) => {
    const tunnel = tunnels.get(req.socket)
    const path = req.url
    if (!tunnel) return sendProxyError(res, 500, 'ERR_INTERNAL', 'Failed to serve a tunnelled request: its tunnel is unknown. This is a bug in toolstorm; please report it.')
    if (!path.startsWith('/')) {
      return sendProxyError(res, 400, 'ERR_REQUEST_UNROUTABLE', `Failed to forward "${req.method} ${path}" through the tunnel to ${tunnel.target.authority}: inside a CONNECT tunnel, send origin-form requests ("GET /path").`)
    }
    // Concatenated, not resolved: `new URL('//other.host/x', origin)` would change the host.
    const clientUrl = new URL(`${tunnel.secure ? 'https' : 'http'}://${tunnel.target.authority}${path}`)
    options.serve(req, res, { origin: clientUrl.origin, host: clientUrl.host, path }, clientUrl, tunnel.run)
  })

  const track = (socket: net.Socket) => {
    open.add(socket)
    socket.once('close', () => open.delete(socket))
  }

  const terminateTls = async (socket: net.Socket, target: ConnectTarget, run: string | undefined) => {
    let context: tls.SecureContext
    try {
      context = await options.leaves.contextFor([target.host])
    } catch {
      socket.destroy()
      return
    }
    if (socket.destroyed) return
    const secure = new tls.TLSSocket(socket, {
      isServer: true,
      secureContext: context,
      ALPNProtocols: ['http/1.1'],
      // A client that opened the tunnel to an IP address may still name the host in SNI: the leaf
      // then covers both. The upstream stays the CONNECT target.
      SNICallback: (servername, callback) => {
        const name = servername.toLowerCase().replace(/\.$/, '')
        if (name === target.host || parseConnectTarget(`${name}:443`) === null) return callback(null, context)
        options.leaves.contextFor([target.host, name]).then(
          (both) => callback(null, both),
          (error: Error) => callback(error, undefined),
        )
      },
    })
    setResetTarget(secure, socket)
    // The TCP socket does not learn on its own that the TLS socket on top of it closed.
    secure.once('close', () => socket.destroy())
    secure.setTimeout(HANDSHAKE_TIMEOUT_MS, () => secure.destroy())
    const onHandshakeError = (error: NodeJS.ErrnoException) => {
      // An untrusting client is expected (and not the proxy's failure): no stack, no noise.
      const reason = error.code ? REFUSED_CERTIFICATE_CODES[error.code] : undefined
      if (reason) options.onCertificateRefused?.(target.host, reason)
      secure.destroy()
      socket.destroy()
    }
    secure.on('error', onHandshakeError)
    // Half-open like the TCP socket under it: a client that leaves mid-handshake must not keep it open.
    secure.once('end', leftEarly)
    // A client that half-closed while the leaf was being made: its FIN was read into the paused TCP
    // socket, which the TLS socket drains (initRead) but never hears end from. Unnoticed, the tunnel
    // waited for a handshake that could not come, with no handle reading, and shutdown never ended.
    const leftBeforeHandshake = () => secure.destroy()
    socket.once('end', leftBeforeHandshake)
    secure.once('secure', () => {
      secure.setTimeout(0)
      secure.off('error', onHandshakeError)
      secure.off('end', leftEarly)
      socket.off('end', leftBeforeHandshake)
      // From here the inner server owns the socket and its errors; this keeps a late one harmless.
      secure.on('error', ignore)
      tunnels.set(secure, { target, secure: true, run })
      inner.handleConnection(secure)
    })
  }

  const dispatch = (socket: net.Socket, target: ConnectTarget, first: Buffer, run: string | undefined) => {
    socket.setTimeout(0)
    socket.off('end', leftEarly)
    socket.pause()
    socket.unshift(first)
    if (first[0] === TLS_HANDSHAKE_RECORD) {
      void terminateTls(socket, target, run)
      return
    }
    tunnels.set(socket, { target, secure: false, run })
    inner.handleConnection(socket)
    socket.resume()
  }

  const tunnelUntouched = (socket: net.Socket, target: ConnectTarget, head: Buffer) => {
    let connected = false
    const upstream = net.connect({ host: target.host, port: target.port })
    track(upstream)
    upstream.setTimeout(TUNNEL_CONNECT_TIMEOUT_MS, () => upstream.destroy(Object.assign(new Error('connect timeout'), { code: 'ETIMEDOUT' })))
    upstream.once('connect', () => {
      connected = true
      upstream.setTimeout(0)
      socket.write('HTTP/1.1 200 Connection Established\r\n\r\n')
      if (head.length) upstream.write(head)
      upstream.pipe(socket)
      socket.pipe(upstream)
    })
    upstream.on('error', (error: NodeJS.ErrnoException) => {
      if (connected) return socket.destroy()
      const status = error.code === 'ETIMEDOUT' ? 504 : 502
      refuseTunnel(socket, status, `Failed to open a tunnel to ${target.authority}: ${error.code ?? error.message}. Check that the host is reachable from this machine.`)
    })
    socket.once('close', () => upstream.destroy())
    upstream.once('close', () => {
      if (connected) socket.destroy()
    })
  }

  const listener = (req: WireRequest, duplex: Duplex, head: Buffer) => {
    const socket = duplex as net.Socket
    socket.on('error', ignore)
    // A client that half-closed before this listener ran (the CA is made on the first CONNECT):
    // its 'end' is gone, and with the server's half-open sockets and unref'd timeouts nothing would
    // ever close the socket, so shutdown waited for it forever.
    if (socket.readableEnded) return socket.destroy()
    // Tracked from the start: every socket handed over here is closed by destroyAll, refused ones too.
    track(socket)
    const target = parseConnectTarget(req.url)
    if (!target) return refuseTunnel(socket, 400, `Failed to open a tunnel to "${req.url}": expected host:port, as in "CONNECT api.example.com:443".`)
    if (options.ownPorts.has(String(target.port))) {
      return refuseTunnel(socket, 403, `Failed to open a tunnel to ${target.authority}: port ${target.port} is this proxy's own (data plane or admin API), never reachable through CONNECT. Call the admin API directly.`)
    }
    if (!allowedPorts.has(target.port)) {
      return refuseTunnel(socket, 403, `Failed to open a tunnel to ${target.authority}: port ${target.port} is not allowed (allowed: ${[...allowedPorts].join(', ')}). Start the proxy with --connect-port ${target.port} to allow it.`)
    }
    if (closing) return refuseTunnel(socket, 503, `Failed to open a tunnel to ${target.authority}: the proxy is shutting down. Retry against a running proxy.`)
    if (options.intercept && !options.intercept(target.host, target.port)) return tunnelUntouched(socket, target, head)
    socket.write('HTTP/1.1 200 Connection Established\r\n\r\n')
    const run = req.headers['proxy-authorization'] === undefined ? undefined : proxyCredentialsRun(req.headers)
    if (head.length) return dispatch(socket, target, head, run)
    socket.setTimeout(HANDSHAKE_TIMEOUT_MS, () => socket.destroy())
    // CONNECT sockets are half-open capable (as the http server made them): close one whose client left.
    socket.once('end', leftEarly)
    socket.once('data', (first: Buffer) => dispatch(socket, target, first, run))
    socket.resume()
  }

  return {
    listener,
    close() {
      closing = true
      inner.close(ignore)
    },
    destroyAll() {
      inner.closeAllConnections()
      for (const socket of open) socket.destroy()
      open.clear()
    },
  }
}

/** Answer a CONNECT with an error and close: the client never gets a tunnel. */
export function refuseTunnel(socket: net.Socket, status: number, message: string): void {
  const body = `[toolstorm] ${message}\n`
  socket.end(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`)
}
