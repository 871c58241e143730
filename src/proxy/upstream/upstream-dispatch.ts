/**
 * The upstream response as the general exchange flow reads it (`forward` → `relay`, used when a
 * fault or an observer needs the body): chunks from an `UpstreamClient` queued with backpressure
 * (the client is paused past a high-water mark) and read as an async iterable, with no
 * intermediate stream.
 */
import type { Readable } from 'node:stream'
import type { ResponseSink } from '../data-plane-server.js'
import type { FlowControl, UpstreamClient } from './upstream-client.js'
import type { UpstreamResponse } from '../../engine/exchange-transport.js'
import type { HeaderMap } from '../../engine/http.js'

const BODY_ABANDONED = new Error('The rest of the response body is not needed.')

/** Queue at most this much while nobody reads yet; then the upstream is paused. */
const HIGH_WATER_BYTES = 256 * 1024

export class DispatchedResponse implements UpstreamResponse {
  status = 0
  headers: HeaderMap = {}
  readonly body: AsyncIterable<Uint8Array>
  #controller: FlowControl | null = null
  #queue: Buffer[] = []
  #queued = 0
  #ended = false
  #error: Error | null = null
  #sink: ResponseSink | null = null
  #sinkDone: { resolve: () => void; reject: (error: Error) => void } | null = null
  #wake: (() => void) | null = null
  #taps: Array<(chunk: Buffer | null, error?: Error) => void> = []
  /** Set by the source that ties this response to its client (live-source.ts). */
  outliveClient?: () => (reason: Error) => void

  constructor() {
    this.body = { [Symbol.asyncIterator]: () => this.#iterate() }
  }

  /** Observe every body chunk (and `null` at the end) without changing the flow: recorders use this. */
  tap(listener: (chunk: Buffer | null, error?: Error) => void): void {
    for (const chunk of this.#queue) listener(chunk)
    if (this.#ended) listener(null)
    else if (this.#error) listener(null, this.#error)
    this.#taps.push(listener)
  }

  /** Write the head and stream the body straight into `res`. Resolves when the body ended. */
  relayTo(res: ResponseSink, headers: Record<string, string | string[]>): Promise<void> {
    res.writeHead(this.status, headers)
    if (this.#ended) {
      // The whole body is here already (small responses): one write.
      res.end(this.#queue.length === 1 ? this.#queue[0] : Buffer.concat(this.#queue))
      this.#queue = []
      return Promise.resolve()
    }
    if (this.#error) return Promise.reject(this.#error)
    for (const chunk of this.#queue) res.write(chunk)
    this.#queue = []
    this.#queued = 0
    this.#sink = res
    this.#controller?.resume()
    return new Promise((resolve, reject) => (this.#sinkDone = { resolve, reject }))
  }

  /** Stop receiving (the client went away). */
  abort(reason: Error): void {
    this.#controller?.abort(reason)
  }

  onStart(controller: FlowControl): void {
    this.#controller = controller
  }

  onData(chunk: Buffer): void {
    for (const tap of this.#taps) tap(chunk)
    const sink = this.#sink
    if (sink) {
      if (!sink.write(chunk)) {
        this.#controller?.pause()
        sink.once('drain', () => this.#controller?.resume())
      }
      return
    }
    this.#queue.push(chunk)
    this.#queued += chunk.length
    if (this.#queued > HIGH_WATER_BYTES) this.#controller?.pause()
    this.#notify()
  }

  // The reader hears of the end (or the failure) before the taps: a tap that throws (an observer,
  // see exchange-failure.ts) must not leave the exchange waiting for an end that never comes.
  onEnd(): void {
    this.#ended = true
    if (this.#sink) {
      this.#sink.end()
      this.#sinkDone?.resolve()
    }
    this.#notify()
    for (const tap of this.#taps) tap(null)
  }

  onError(error: Error): void {
    this.#error = error
    this.#sinkDone?.reject(error)
    this.#notify()
    for (const tap of this.#taps) tap(null, error)
  }

  #notify(): void {
    const wake = this.#wake
    this.#wake = null
    wake?.()
  }

  async *#iterate(): AsyncGenerator<Uint8Array> {
    try {
      while (true) {
        if (this.#queue.length > 0) {
          const chunk = this.#queue.shift() as Buffer
          this.#queued -= chunk.length
          if (this.#queued <= HIGH_WATER_BYTES) this.#controller?.resume()
          yield chunk
          continue
        }
        if (this.#error) throw this.#error
        if (this.#ended) return
        await new Promise<void>((resolve) => (this.#wake = resolve))
      }
    } finally {
      // A reader that stops early (a stream fault cut the body) no longer wants the rest.
      if (!this.#ended && !this.#error) this.abort(BODY_ABANDONED)
    }
  }
}

export interface UpstreamRequest {
  readonly origin: string
  readonly path: string
  readonly method: string
  readonly headers: Record<string, string | string[]>
  readonly body: Readable | null
}

/** Send upstream through an `UpstreamClient`; resolves at the response head. */
export function sendUpstream(client: UpstreamClient, request: UpstreamRequest, response: DispatchedResponse = new DispatchedResponse()): Promise<DispatchedResponse> {
  return new Promise((resolve, reject) => {
    let started = false
    const control = client.send(request.origin, { method: request.method, path: request.path, headers: request.headers }, request.body, {
      onHead(status, headers) {
        started = true
        response.status = status
        response.headers = headers
        resolve(response)
      },
      onData(chunk) {
        response.onData(chunk)
      },
      onEnd() {
        response.onEnd()
      },
      onError(error) {
        if (started) response.onError(error)
        else reject(error)
      },
    })
    response.onStart(control)
  })
}
