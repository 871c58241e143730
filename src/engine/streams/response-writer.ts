/**
 * The transport primitive stream faults write through: a response the flow sends piece by piece.
 * `ExchangeTransport.open()` returns one; the proxy and the in-process transports implement it.
 */
import type { Exchange } from '../exchange.js'
import type { HeaderMap } from '../http.js'

export interface ResponseWriter {
  /** Send bytes. Resolves when the transport can take more (backpressure); rejects once the client is gone. */
  write(bytes: Uint8Array): Promise<void>
  /** End the body cleanly. */
  end(): void
  /**
   * Close the connection without ending the body (no terminal chunk): the client sees its own
   * "incomplete body" error, as when a server dies mid-stream (`TypeError: terminated` in fetch).
   */
  abort(): void
  /** Reset the connection (a TCP RST; in-process, the error a reset gives). */
  reset(): void
  /** Aborts when the client stops reading or disconnects. */
  readonly closed: AbortSignal
}

/** The observer hooks a writer reports to (a subset of `ExchangeObserver`). */
export interface ClientBodyObserver {
  onClientHead?(exchange: Exchange, status: number, headers: HeaderMap, sameAsUpstream: boolean): void
  onClientBody?(exchange: Exchange, chunk: Uint8Array | null): void
}

/**
 * Report what a writer sends to an observer: the head (`sameAsUpstream` false), each chunk as the
 * client receives it, then `null` when the body ends, breaks off or is reset. Recorders see a
 * faulted stream exactly as the client did, chunk by chunk.
 */
export function observeWriter(exchange: Exchange, observer: ClientBodyObserver, status: number, headers: HeaderMap, writer: ResponseWriter): ResponseWriter {
  observer.onClientHead?.(exchange, status, headers, false)
  let ended = false
  const end = () => {
    if (ended) return
    ended = true
    observer.onClientBody?.(exchange, null)
  }
  return {
    closed: writer.closed,
    write(bytes) {
      if (bytes.length) observer.onClientBody?.(exchange, bytes)
      return writer.write(bytes)
    },
    end() {
      end()
      writer.end()
    },
    abort() {
      end()
      writer.abort()
    },
    reset() {
      end()
      writer.reset()
    },
  }
}
