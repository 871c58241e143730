/**
 * Whether a client got the event that ends its event stream: a model provider's final event
 * (`[DONE]`, `message_stop`, `response.completed`: the model-calls plug-in's `isFinalEvent`) or,
 * for an MCP request, the JSON-RPC answer to that request's id (the MCP plug-in's `readAnswer`).
 * A client that closes right after it (the openai SDK, MCP clients) got a complete response: the
 * call is recorded as one, not as cancelled.
 *
 * Fed the bytes as they are handed to the client; a compressed stream is not read (never ends).
 */
import { type HeaderMap, headerValue, type RequestView } from '../http.js'
import type { Exchange } from '../exchange.js'
import type { AnswerReader } from '../protocol-hooks.js'
import { type FinalEventTest, SseBlockReader } from './sse-splitter.js'

export interface StreamEnd {
  /** Bytes the client was handed, in order (the caller may reuse `chunk` once this returns). */
  push(chunk: Uint8Array): void
  /** The ending event is among them. */
  readonly reached: boolean
}

/**
 * A watch over the response `headers` start, for `exchange`; null unless it is an event stream
 * the exchange's plug-ins can read (`readAnswer`, `isFinalEvent`).
 */
export function watchStreamEnd(exchange: Exchange, headers: HeaderMap): StreamEnd | null {
  const type = (headerValue(headers, 'content-type') ?? '').toLowerCase()
  if (!type.startsWith('text/event-stream')) return null
  const encoding = (headerValue(headers, 'content-encoding') ?? '').toLowerCase()
  if (encoding !== '' && encoding !== 'identity') return null
  const { readAnswer, isFinalEvent } = exchange.protocol
  return (readAnswer && answerWatch(readAnswer, exchange.request, type)) ?? (isFinalEvent ? finalEventWatch(isFinalEvent) : null)
}

/** A model stream's final event. */
function finalEventWatch(isFinal: FinalEventTest): StreamEnd {
  const watch = {
    reached: false,
    push(chunk: Uint8Array) {
      if (!watch.reached) blocks.push(chunk)
    },
  }
  const blocks = new SseBlockReader((_end, block) => {
    if (block.terminal) watch.reached = true
  }, isFinal)
  return watch
}

/** The answer to one request (MCP): its stream has nothing more for this request after it. */
function answerWatch(readAnswer: AnswerReader, request: RequestView, contentType: string): StreamEnd | null {
  let reached = false
  const read = readAnswer(request, contentType, () => (reached = true))
  if (!read) return null
  return {
    get reached() {
      return reached
    },
    // The reader holds pieces of a message until it ends: a copy, since the caller may reuse the chunk.
    push: (chunk) => reached || read(Buffer.from(chunk)),
  }
}
