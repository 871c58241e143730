/**
 * MCP requests through the proxy: the body of a request that may carry an MCP message is read
 * (at most `MCP_BODY_LIMIT` bytes) before the exchange begins, since its route name is in it;
 * then the same bytes are forwarded. Every other request streams as before and pays nothing.
 *
 * @see docs/mcp.md
 */
import type { Readable } from 'node:stream'
import { MCP_BODY_LIMIT, type McpDetector } from '../engine/mcp/mcp-options.js'
import { parseMcpRequest, type McpRequest } from '../engine/json-rpc/mcp-request.js'
import { RequestBody, WireRequest } from './http1/wire-request.js'

export interface ReadMcpRequest {
  /** The request to serve: `req` with its body replayed from what was read (and the rest, if any). */
  readonly req: WireRequest
  /** The MCP message; when the body is larger than the bound, the one its headers name (if any); null when it is none. */
  readonly mcp: McpRequest | null
}

/** Read `req`'s body (bounded) and parse it as an MCP message. Rejects when the client broke off. */
export function readMcpRequest(req: WireRequest & { body: RequestBody }, url: URL, detector: McpDetector): Promise<ReadMcpRequest> {
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
      if (size <= MCP_BODY_LIMIT) return
      // Too large to be read first: what was read leaves first, the rest follows as it comes.
      source.pause()
      cleanup()
      resolve({ req: withBody(req, replay(chunks, source), false), mcp: detector.namedByHeaders(req.method, url, req.headers) })
    }
    const onEnd = () => {
      cleanup()
      const bytes = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size)
      const session = req.headers['mcp-session-id']
      resolve({ req: withBody(req, replay([bytes], null), true), mcp: parseMcpRequest(bytes, typeof session === 'string' ? session : null) })
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
