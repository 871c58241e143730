/**
 * One interface over the two ways the proxy reaches upstreams: its own keep-alive pool on
 * Node's native parser (the default, see upstream-pool.ts), or an undici dispatcher the user
 * supplies (`startProxy({ dispatcher })`, for example to go through a corporate proxy).
 */
import type { Readable } from 'node:stream'
import type tls from 'node:tls'
import type { Dispatcher } from 'undici'
import { asDispatcher, type UserDispatcher } from '../../options/user-dispatcher.js'
import { UpstreamPool, type UpstreamHandler, type UpstreamPoolOptions, type UpstreamRequestHead } from './upstream-pool.js'

/** Backpressure and cancellation for one request in flight. */
export interface FlowControl {
  pause(): void
  resume(): void
  abort(reason?: Error): void
  /** Lent read-buffer bytes are no longer in use (see UpstreamHandler.borrows). */
  release(): void
}

export interface UpstreamClient {
  send(origin: string, head: UpstreamRequestHead, body: Readable | null, handler: UpstreamHandler): FlowControl
  close(): Promise<void>
}

/**
 * How the proxy and the replay server reach upstreams: the caller's dispatcher when given (never
 * closed here), else a pool of their own (closed with the client).
 */
export function createUpstreamClient(options: { dispatcher?: UserDispatcher | undefined; tls?: tls.ConnectionOptions | undefined; onHandlerError?: UpstreamPoolOptions['onHandlerError'] }): UpstreamClient {
  if (options.dispatcher) return undiciClient(asDispatcher(options.dispatcher))
  return poolClient(new UpstreamPool({ keepAliveMs: 4_000, ...(options.tls ? { tls: options.tls } : {}), ...(options.onHandlerError ? { onHandlerError: options.onHandlerError } : {}) }))
}

/** The proxy's own pool. */
export function poolClient(pool: UpstreamPool): UpstreamClient {
  return {
    send: (origin, head, body, handler) => pool.request(origin, head, body, handler),
    close: () => pool.close(),
  }
}

/** A user-supplied undici dispatcher (not closed by the proxy). */
export function undiciClient(dispatcher: Dispatcher): UpstreamClient {
  return {
    send(origin, head, body, handler) {
      let controller: Dispatcher.DispatchController | null = null
      let pending: 'pause' | 'abort' | null = null
      let abortReason: Error | undefined
      dispatcher.dispatch(
        { origin, path: head.path, method: head.method as Dispatcher.HttpMethod, headers: head.headers, body },
        {
          onRequestStart(control) {
            controller = control
            if (pending === 'abort') control.abort(abortReason ?? new Error('Request aborted'))
            else if (pending === 'pause') control.pause()
          },
          onResponseStart(_control, status, headers) {
            handler.onHead(status, headers as Record<string, string | string[]>)
          },
          onResponseData(control, chunk) {
            if (handler.onData(chunk) === false) control.pause()
          },
          onResponseEnd() {
            handler.onEnd()
          },
          onResponseError(_control, error) {
            handler.onError(error as NodeJS.ErrnoException)
          },
        },
      )
      return {
        pause: () => (controller ? controller.pause() : (pending = 'pause')),
        resume: () => (controller ? controller.resume() : (pending = null)),
        abort: (reason) => {
          abortReason = reason
          if (controller) controller.abort(reason ?? new Error('Request aborted'))
          else pending = 'abort'
        },
        // undici's chunks are never lent.
        release: () => undefined,
      }
    },
    close: async () => undefined,
  }
}
