/**
 * Whether a client got the event that ends its event stream: a model provider's final event
 * (`[DONE]`, `message_stop`, `response.completed`: terminal-event.ts) or, for an MCP request, the
 * JSON-RPC answer to that request's id. A client that closes right after it (the openai SDK, MCP
 * clients) got a complete response: the call is recorded as one, not as cancelled.
 *
 * Fed the bytes as they are handed to the client; a compressed stream is not read (never ends).
 */
import { type HeaderMap, headerValue } from '../http.js'
import type { Exchange } from '../exchange.js'
import { createMcpAnswerReader } from '../../mcp/mcp-answer-reader.js'
import type { JsonRpcId } from '../json-rpc/mcp-request.js'
import { SseBlockReader } from './sse-splitter.js'

export interface StreamEnd {
  /** Bytes the client was handed, in order (the caller may reuse `chunk` once this returns). */
  push(chunk: Uint8Array): void
  /** The ending event is among them. */
  readonly reached: boolean
}

/** A watch over the response `headers` start, for `exchange`; null unless it is an event stream it can read. */
export function watchStreamEnd(exchange: Exchange, headers: HeaderMap): StreamEnd | null {
  const type = (headerValue(headers, 'content-type') ?? '').toLowerCase()
  if (!type.startsWith('text/event-stream')) return null
  const encoding = (headerValue(headers, 'content-encoding') ?? '').toLowerCase()
  if (encoding !== '' && encoding !== 'identity') return null
  const id = exchange.request.mcp?.id
  return id === null || id === undefined ? finalEventWatch() : answerWatch(id, type)
}

/** A model stream's final event. */
function finalEventWatch(): StreamEnd {
  const watch = {
    reached: false,
    push(chunk: Uint8Array) {
      if (!watch.reached) blocks.push(chunk)
    },
  }
  const blocks = new SseBlockReader((_end, block) => {
    if (block.terminal) watch.reached = true
  })
  return watch
}

/** The answer to one MCP request: its stream has nothing more for this request after it. */
function answerWatch(id: JsonRpcId, contentType: string): StreamEnd {
  // The reader holds pieces of a message until it ends: a copy, since the caller may reuse the chunk.
  const watch = { reached: false, push: (chunk: Uint8Array) => watch.reached || read(Buffer.from(chunk)) }
  const read = createMcpAnswerReader(id, contentType, () => (watch.reached = true))
  return watch
}
