/**
 * The proxy's HTTP/1.1 client for upstreams: a pool of keep-alive connections per origin
 * (upstream-connection.ts holds one connection and the client on it: writing the request, parsing
 * the answer with Node's own native llhttp binding, handing the body over as it arrives).
 *
 * @note Hand-written instead of undici on purpose. undici parses with llhttp compiled to WASM,
 * copying every socket read into WASM memory and through JS callbacks; on the proxy's relay path
 * that made a 64 KiB response cost about twice what the native parser does (bench/: `npm run
 * bench proxy`), and a 64 B one ~15 % more. The proxy needs no more than plain request/response
 * forwarding here: no redirects, retries, pipelining or caching (and it must never retry: a
 * request is sent upstream at most once). undici stays for everything else.
 */
import type { Readable } from 'node:stream'
import type tls from 'node:tls'
import { printExchangeFailure, reportFailure, type ExchangeErrorReporter } from '../exchange-failure.js'
import { Call, codedError, UpstreamConnection, type ConnectionOwner, type UpstreamCall, type UpstreamHandler, type UpstreamRequestHead } from './upstream-connection.js'

export type { UpstreamCall, UpstreamHandler, UpstreamRequestHead } from './upstream-connection.js'
export { keepAliveHintMs } from './upstream-connection.js'

export interface UpstreamPoolOptions {
  /** Close an idle socket after this long; below Node's default server keep-alive (5 s) so a reused socket is not closed under us. */
  keepAliveMs?: number
  /** No response head within this long fails the request. */
  headersTimeoutMs?: number
  /** No body bytes for this long fails the request. */
  bodyTimeoutMs?: number
  /** TLS options for https origins (verification settings, extra CAs). */
  tls?: tls.ConnectionOptions
  /**
   * A handler threw in this pool's socket callbacks: its call failed (with `ERR_EXCHANGE_FAILED`)
   * and its connection was discarded, the pool goes on. Default: one line on stderr.
   */
  onHandlerError?: ExchangeErrorReporter
}

const MAX_IDLE_PER_ORIGIN = 256

export class UpstreamPool {
  readonly #options: ConnectionOwner['options']
  /** What the pool's connections call back (a connection never sees the pool's idle lists). */
  readonly #owner: ConnectionOwner
  readonly #idle = new Map<string, UpstreamConnection[]>()
  readonly #all = new Set<UpstreamConnection>()
  #closed = false
  #sweeper: NodeJS.Timeout | null = null

  constructor(options: UpstreamPoolOptions = {}) {
    this.#options = {
      keepAliveMs: options.keepAliveMs ?? 4_000,
      headersTimeoutMs: options.headersTimeoutMs ?? 300_000,
      bodyTimeoutMs: options.bodyTimeoutMs ?? 300_000,
      tls: options.tls,
      onHandlerError: options.onHandlerError ?? printExchangeFailure,
    }
    this.#owner = {
      options: this.#options,
      release: (connection, call) => this.#release(connection, call),
      discard: (connection) => this.discard(connection),
      forget: (connection) => this.#forget(connection),
      handlerThrew: (connection, call, error) => this.#handlerThrew(connection, call, error),
    }
  }

  /** Send one request upstream. The handler hears about the head, the body and the end (or an error), exactly once each. */
  request(origin: string, head: UpstreamRequestHead, body: Readable | null, handler: UpstreamHandler): UpstreamCall {
    const call = new Call(this.#owner, head, body, handler)
    if (this.#closed) {
      call.fail(codedError('UND_ERR_DESTROYED', 'The upstream pool is closed'))
      return call
    }
    let connection: UpstreamConnection | undefined
    const idle = this.#idle.get(origin)
    while (idle && idle.length) {
      const candidate = idle.pop() as UpstreamConnection
      const fresh = performance.now() - candidate.idleSince < candidate.keepAliveMs
      candidate.idleSince = -1
      if (fresh && !candidate.closed && !candidate.socket.destroyed && candidate.socket.readyState === 'open') {
        connection = candidate
        connection.reused = true
        break
      }
    }
    connection ??= this.#connect(origin)
    connection.start(call)
    return call
  }

  #connect(origin: string): UpstreamConnection {
    const connection = new UpstreamConnection(origin, this.#owner)
    this.#all.add(connection)
    return connection
  }

  /** Last resort (see exchange-failure.ts): report once, drop the connection, fail the call if it is still open. */
  #handlerThrew(connection: UpstreamConnection | null, call: Call | null, error: unknown): void {
    const origin = connection?.origin ?? 'the upstream'
    reportFailure(this.#options.onHandlerError, error, call ? `"${call.head.method} ${call.head.path}" at ${origin}` : `a response from ${origin}`)
    if (connection) this.discard(connection)
    // A handler that throws again on this failure is caught in fail() and not reported twice.
    call?.fail(Object.assign(new Error('The exchange failed in a handler', { cause: error }), { code: 'ERR_EXCHANGE_FAILED' }))
  }

  /** Put a connection back after its exchange, once its request body was sent in full. */
  #release(connection: UpstreamConnection, call: Call): void {
    if (!call.bodySent) return // the body's 'end' comes back here
    if (connection.pinnedBy !== null) return // unpin() comes back here
    if (call.paused) {
      call.paused = false
      connection.socket.resume()
    }
    if (this.#closed || connection.closed || connection.socket.destroyed || !connection.keepAlive) return this.discard(connection)
    const idle = this.#idle.get(connection.origin) ?? []
    if (idle.length >= MAX_IDLE_PER_ORIGIN) return this.discard(connection)
    idle.push(connection)
    this.#idle.set(connection.origin, idle)
    connection.idleSince = performance.now()
    this.#sweepSoon()
  }

  /** Close sockets idle for longer than the keep-alive time, checking once a second while any are idle. */
  #sweepSoon(): void {
    if (this.#sweeper) return
    this.#sweeper = setInterval(() => {
      const now = performance.now()
      let idleLeft = 0
      for (const list of this.#idle.values()) {
        for (const connection of [...list]) {
          if (now - connection.idleSince >= connection.keepAliveMs) this.discard(connection)
          else idleLeft++
        }
      }
      if (idleLeft === 0 && this.#sweeper) {
        clearInterval(this.#sweeper)
        this.#sweeper = null
      }
    }, Math.min(1000, this.#options.keepAliveMs))
    this.#sweeper.unref()
  }

  /** Destroy a connection and forget it. */
  discard(connection: UpstreamConnection): void {
    if (connection.closed) return
    connection.closed = true
    connection.socket.destroy()
    this.#forget(connection)
  }

  #forget(connection: UpstreamConnection): void {
    if (!this.#all.delete(connection)) return
    connection.closed = true
    connection.free()
    const idle = this.#idle.get(connection.origin)
    if (idle) {
      const index = idle.indexOf(connection)
      if (index !== -1) idle.splice(index, 1)
    }
  }

  /** Close every connection; requests in flight fail. Safe to call twice. */
  async close(): Promise<void> {
    this.#closed = true
    if (this.#sweeper) clearInterval(this.#sweeper)
    this.#sweeper = null
    for (const connection of [...this.#all]) {
      connection.call?.fail(codedError('UND_ERR_DESTROYED', 'The upstream pool was closed'))
      this.discard(connection)
    }
  }
}

