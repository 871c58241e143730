/**
 * Carry out a `stream` action: relay the upstream body through a stream transform, chunk by
 * chunk, writing through the transport's `open()` primitive. Nothing is buffered beyond what the
 * transform holds back (at most one SSE event), and backpressure reaches the upstream: the next
 * chunk is read only when the client took the previous one.
 */
import { ToolstormError } from '../../errors.js'
import type { Exchange, ExchangeEnding } from '../exchange.js'
import type { ExchangeTransport, UpstreamResponse } from '../exchange-transport.js'
import type { HeaderMap } from '../http.js'
import type { StreamStep, StreamTransform } from './stream-transform.js'
import type { ResponseWriter } from './response-writer.js'
import { watchStreamEnd } from './stream-end.js'
import { readOn } from './read-on.js'

/** Response headers that no longer hold once the body is changed. */
const STALE_HEADERS = new Set(['content-length', 'content-md5', 'digest', 'etag', 'transfer-encoding'])

/** How a relayed stream ended (recorded as the client sees it); `reading`: the rest of a cut stream still read on, the exchange closes once it ends. */
export type RelayEnding = ExchangeEnding & { readonly reading?: Promise<void> | null }

/**
 * Relay `upstream` to the client through `transform`; resolves with how the exchange ended.
 * A transport without `open()` relays the body unchanged (the fault then does not trigger).
 * The exchange's plug-ins say where the stream ends (stream-end.ts) and whether a cut stream is
 * read on (read-on.ts).
 */
export async function relayStream(exchange: Exchange, io: ExchangeTransport, upstream: UpstreamResponse | undefined, transform: StreamTransform): Promise<RelayEnding> {
  if (!upstream) throw new ToolstormError('ERR_INTERNAL', `Failed to relay a stream for "${exchange.request.method} ${exchange.record?.url ?? ''}": the fault returned a stream action before the upstream answered. Give stream faults the on-response phase.`)
  const status = upstream.status
  const answered = { outcome: 'response', status } as const
  if (!io.open) {
    await io.relay(upstream)
    return exchange.ended(answered)
  }
  const headers: HeaderMap = {}
  for (const [name, value] of Object.entries(upstream.headers)) {
    const lower = name.toLowerCase()
    if (!STALE_HEADERS.has(lower) || (lower === 'content-length' && transform.keepsLength)) headers[name] = value
  }
  const writer = io.open(status, headers)
  // Whether the client got the stream's final event: leaving after it, it got the whole answer.
  const end = watchStreamEnd(exchange, upstream.headers)
  const iterator = upstream.body[Symbol.asyncIterator]()
  let upstreamDone = false
  let bytes = 0
  const send = async (step: StreamStep) => {
    if (transform.changed) exchange.markInjected()
    for (const piece of step.send) {
      if (piece.delay) await exchange.clock.sleep(piece.delay, writer.closed)
      if (piece.bytes.length === 0) continue
      await writer.write(piece.bytes)
      end?.push(piece.bytes)
      bytes += piece.bytes.length
    }
  }

  let step: StreamStep
  let stop: ((reason: Error) => void) | undefined
  try {
    while (true) {
      const next = await iterator.next()
      if (next.done) {
        upstreamDone = true
        step = transform.finish()
        await send(step)
        break
      }
      step = transform.push(next.value)
      await send(step)
      if (step.next !== 'continue') break
    }
    // The client is cut before the upstream ended: a plug-in may want the rest (a model stream's usage comes last).
    if (!upstreamDone && step.next !== 'end' && exchange.protocol.readsOnAfterCut?.(exchange.request)) stop = upstream.outliveClient?.()
  } catch (error) {
    if (writer.closed.aborted) {
      // The client left: closing what is left of the response tells observers the body ended here.
      writer.abort()
      return exchange.ended(end?.reached ? answered : { outcome: 'cancelled', status, error: 'CLIENT_ABORTED' })
    }
    // The upstream broke off mid-body: the client must see a broken connection, never a clean end.
    writer.reset()
    throw error
  } finally {
    // Stop reading an upstream whose rest the client will never get (this releases its connection).
    if (!upstreamDone && !stop) await iterator.return?.().catch(() => undefined)
  }
  const reading = stop ? readOn(iterator, stop, exchange.record) : null

  if (transform.truncated && exchange.record) {
    const at = transform.cutAt
    exchange.record.cut = at ? { events: transform.events, bytes, at: at.at, deltas: at.deltas } : { events: transform.events, bytes }
  }
  if (!transform.changed && transform.notFired && exchange.record) exchange.record.notFired = transform.notFired
  switch (step.next) {
    case 'continue':
    case 'end':
      writer.end()
      return exchange.ended(answered)
    case 'abort':
      writer.abort()
      return exchange.ended({ outcome: 'error', status, error: 'STREAM_CUT', reading })
    case 'reset':
      writer.reset()
      return exchange.ended({ outcome: 'reset', status, error: 'ECONNRESET', reading })
    case 'stall': {
      const left = await hold(exchange, writer, step.holdSeconds ?? 0)
      writer.abort()
      return exchange.ended(left ? { outcome: 'cancelled', status, error: 'CLIENT_ABORTED', reading } : { outcome: 'error', status, error: 'STREAM_CUT', reading })
    }
  }
}

/** Hold the connection until the client leaves (true) or `seconds` pass (false; 0 waits for the client). */
async function hold(exchange: Exchange, writer: ResponseWriter, seconds: number): Promise<boolean> {
  const closed = writer.closed
  if (closed.aborted) return true
  if (seconds > 0) {
    try {
      await exchange.clock.sleep(seconds, closed)
      return false
    } catch {
      return true
    }
  }
  await new Promise<void>((resolve) => closed.addEventListener('abort', () => resolve(), { once: true }))
  return true
}
