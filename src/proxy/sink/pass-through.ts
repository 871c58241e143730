/**
 * The pass-through fast path: forward a request over the live pool and relay its response in one
 * go, writing the pool's lent read buffers (UpstreamHandler.borrows) straight to the client
 * socket. The socket sink offers it as a capability (`passThrough`) when nothing wants the
 * exchange: no fault, no observer. It lives beside the pool because it is written against the
 * pool's lending contract, not against the sink.
 */
import { errorCode } from '../../engine/http.js'
import type { ForwardOptions, PassThroughHooks } from '../../engine/exchange-transport.js'
import type { UpstreamTarget } from '../../engine/upstream-source.js'
import type { CompleteReply } from './client-replies.js'
import { endToEndHeaders } from '../hop-by-hop.js'
import type { WireRequest } from '../http1/wire-request.js'
import type { WireResponse } from '../http1/wire-response.js'
import { forwardHeaders } from '../upstream/live-source.js'
import { resetOrDestroy } from './reset-socket.js'
import type { FlowControl, UpstreamClient } from '../upstream/upstream-client.js'

/** What the fast path asks of the sink it runs for. */
export interface PassThroughSink {
  /** The client went away. */
  gone(): boolean
  /** Answer the client in full (the upstream could not be reached). */
  respond(reply: CompleteReply): void
}

/** Forward `req` to `upstream` over `pool` and relay the answer to `res`; returns the call's flow control. */
export function passThrough(pool: UpstreamClient, upstream: UpstreamTarget, req: WireRequest, res: WireResponse, options: ForwardOptions, hooks: PassThroughHooks, sink: PassThroughSink): FlowControl {
  const socket = req.socket
  let control: FlowControl | null = null
  let paused = false
  let status = 0
  // Shown each chunk as it goes to the client, when the flow wants them (an event stream's final event).
  let sent: ((chunk: Uint8Array) => void) | undefined
  let held: Buffer[] | null = null
  let flush: NodeJS.Immediate | null = null
  let ended = false
  /** The latest write that may hold bytes lent by the pool and has not completed (see UpstreamHandler.borrows). */
  let pendingLent: object | null = null
  const pauseUntilDrain = () => {
    const flow = control
    if (!flow || paused) return
    paused = true
    flow.pause()
    res.once('drain', () => {
      paused = false
      flow.resume()
    })
  }
  // Body chunks wait for the end of the event loop's I/O phase and leave together: the socket
  // reads everything the upstream sent in that phase first, so a response that arrived in
  // several reads goes out as one writev with its head, and a streamed one is delayed by less
  // than a loop turn. Chunks lent by the pool cannot wait past their read: they leave when the
  // read ends (afterRead), and the pool reads no more into them until the write completes.
  const writeHeld = (end: boolean) => {
    const chunks = held
    held = null
    if (flush) clearImmediate(flush)
    flush = null
    // Writes complete in order: when this one has, every earlier one has too.
    const token = {}
    const written = () => {
      if (pendingLent !== token) return
      pendingLent = null
      control?.release()
    }
    socket.cork()
    let ok = true
    const last = chunks ? chunks.length - 1 : -1
    if (chunks) for (let i = 0; i < (end ? last : chunks.length); i++) ok = res.write(chunks[i] as Buffer, i === last ? written : undefined)
    if (end) res.end(chunks?.[last], written)
    if (sent && chunks) for (const chunk of chunks) sent(chunk)
    socket.uncork()
    // Bytes still queued on the socket (a slow client) may be the pool's read buffer: it waits.
    if (socket.writableLength > 0) pendingLent = token
    if (!ok && !end) pauseUntilDrain()
  }
  const flushHeld = () => {
    flush = null
    if (!ended && held !== null) writeHeld(false)
  }
  control = pool.send(upstream.origin, { method: req.method, path: upstream.path, headers: forwardHeaders(req.headers, upstream, options) }, req.body, {
    borrows: true,
    afterRead: () => {
      if (held !== null) writeHeld(false)
      return pendingLent !== null
    },
    onHead: (statusCode, headers) => {
      status = statusCode
      sent = hooks.upstreamHead(statusCode, headers)
      // Parsed by llhttp (ours or undici's), which refuses what would break a head: not checked again.
      if (!res.destroyed) res.writeHead(statusCode, endToEndHeaders(headers), true)
    },
    onData: (chunk, lent) => {
      if (res.destroyed) return
      if (held === null) held = [chunk]
      else held.push(chunk)
      // A lent chunk leaves when its read ends (afterRead): no timer for it.
      if (!lent && flush === null) flush = setImmediate(flushHeld)
    },
    onEnd: () => {
      ended = true
      writeHeld(true)
      hooks.done('response', status)
    },
    onError: (error) => {
      ended = true
      held = null
      if (flush) clearImmediate(flush)
      if (sink.gone() || errorCode(error) === 'UND_ERR_ABORTED') return hooks.done('cancelled', status || null)
      if (status === 0 && !res.headersSent) {
        const reply = hooks.failedBeforeHead(error)
        return reply ? sink.respond(reply) : undefined
      }
      // The upstream died mid-body: the client must see a broken connection, never a clean end.
      resetOrDestroy(socket)
      hooks.done('error', null, errorCode(error))
    },
  })
  return control
}
