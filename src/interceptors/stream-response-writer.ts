/**
 * The in-process `ResponseWriter`: the client's `Response` body is a `ReadableStream` the flow
 * feeds piece by piece, pulled at the client's pace. A cut errors the body exactly as fetch does
 * when a server closes mid-body (`TypeError: terminated`).
 */
import type { ResponseWriter } from '../engine/streams/response-writer.js'
import { holdRequest } from './held-requests.js'
import { createConnectionResetError, createFetchTerminatedError } from './network-error.js'

/**
 * Create the body stream, hand it to `respond` (which answers the intercepted request with it),
 * and return the writer that feeds it. When the client aborts `request`, the body errors with the
 * abort reason, as a real fetch body does (the request is held meanwhile: held-requests.ts).
 */
export function openStreamResponse(respond: (body: ReadableStream<Uint8Array>) => void, request: Request): ResponseWriter {
  const signal = request.signal
  const release = holdRequest(request)
  const gone = new AbortController()
  let controller!: ReadableStreamDefaultController<Uint8Array>
  let wake: (() => void) | null = null
  let settled = false
  const resume = () => {
    const resolve = wake
    wake = null
    resolve?.()
  }
  const settle = () => {
    settled = true
    release()
  }
  const fail = (error: unknown) => {
    if (settled) return
    settle()
    try {
      controller.error(error)
    } catch {
      // The client already cancelled the body.
    }
  }
  const body = new ReadableStream<Uint8Array>(
    {
      start(c) {
        controller = c
      },
      pull: resume,
      cancel(reason) {
        settle()
        gone.abort(reason ?? new Error('The client stopped reading the response.'))
        resume()
      },
    },
    { highWaterMark: 1 },
  )
  const onAbort = () => {
    fail(signal.reason)
    gone.abort(signal.reason)
    resume()
  }
  if (signal.aborted) onAbort()
  else signal.addEventListener('abort', onAbort, { once: true })
  gone.signal.addEventListener('abort', () => signal.removeEventListener('abort', onAbort), { once: true })
  respond(body)
  return {
    closed: gone.signal,
    async write(bytes) {
      if (gone.signal.aborted) throw gone.signal.reason
      if (settled) return
      controller.enqueue(bytes)
      // Wait until the client asks for more: its reads pace the upstream.
      while ((controller.desiredSize ?? 1) <= 0 && !gone.signal.aborted) await new Promise<void>((resolve) => (wake = resolve))
      if (gone.signal.aborted) throw gone.signal.reason
    },
    end() {
      if (settled) return
      settle()
      controller.close()
    },
    abort() {
      fail(createFetchTerminatedError())
    },
    reset() {
      fail(createFetchTerminatedError(createConnectionResetError()))
    },
  }
}
