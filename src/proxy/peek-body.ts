/**
 * A request body read before the exchange begins (a plug-in names the request by it: MCP), at
 * most `limit` bytes; then the same bytes are forwarded, followed by the rest as it comes. Every
 * other request streams as before and pays nothing.
 *
 * @see ../engine/serve.ts
 */
import type { Readable } from 'node:stream'
import { RequestBody, WireRequest } from './http1/wire-request.js'

export interface PeekedBody {
  /** The request to serve: `req` with its body replayed from what was read (and the rest, if any). */
  readonly req: WireRequest
  /** The whole body, or null when it is longer than the limit. */
  readonly bytes: Buffer | null
}

/** Read up to `limit` bytes of `req`'s body. Rejects when the client broke off. */
export function peekBody(req: WireRequest & { body: RequestBody }, limit: number): Promise<PeekedBody> {
  const source = req.body
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let size = 0
    const cleanup = () => {
      source.off('data', onData)
      source.off('end', onEnd)
      source.off('error', onError)
    }
    const onData = (chunk: Buffer) => {
      chunks.push(chunk)
      size += chunk.length
      if (size <= limit) return
      // Too large to be read first: what was read leaves first, the rest follows as it comes.
      source.pause()
      cleanup()
      resolve({ req: withBody(req, replay(chunks, source), false), bytes: null })
    }
    const onEnd = () => {
      cleanup()
      const bytes = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size)
      resolve({ req: withBody(req, replay([bytes], null), true), bytes })
    }
    const onError = (error: Error) => {
      cleanup()
      reject(error)
    }
    source.on('data', onData)
    source.on('end', onEnd)
    source.on('error', onError)
  })
}

function withBody(req: WireRequest, body: RequestBody, complete: boolean): WireRequest {
  const copy = new WireRequest(req.method, req.url, req.headers, req.httpVersion, req.socket, body)
  copy.complete = complete
  return copy
}

/** A request body that gives `chunks`, then the rest of `rest` (with its flow control), then ends. */
function replay(chunks: readonly Buffer[], rest: Readable | null): RequestBody {
  const body = new RequestBody({ pauseBody: () => rest?.pause(), resumeBody: () => rest?.resume() })
  for (const chunk of chunks) body.push(chunk)
  if (!rest) {
    body.push(null)
    return body
  }
  rest.on('data', (chunk: Buffer) => body.deliver(chunk))
  rest.once('end', () => body.push(null))
  rest.once('error', (error) => body.destroy(error))
  return body
}
