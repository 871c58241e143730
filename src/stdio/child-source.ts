/**
 * The upstream source over a stdio MCP server (`child-server.ts`): one exchange is one JSON-RPC
 * request written to the server's stdin, its response the answer line the server writes back with
 * the same id.
 *
 * Adapted to the engine's HTTP-shaped exchange here (docs/architecture.md):
 * - the response head is "the server has the call": `forward` resolves once the request is written,
 *   with status 200, and the body is the answer line when it comes. So the faults that act after
 *   the upstream took the request run at the right moment: `crash` kills the server with the call
 *   in it, `response_lost` waits for the whole answer (the server's work is done), then drops it.
 * - `x-toolstorm-call` (the exchange id a tool server reports its effects with) travels where a
 *   stdio server can read it: in the request's `params._meta`, under the same name.
 * - the server gone before it answered is the body breaking off (`MCP_SERVER_EXITED`).
 */
import type { Readable } from 'node:stream'
import type { ForwardOptions, UpstreamExchange, UpstreamResponse } from '../engine/exchange-transport.js'
import { HEADER_CALL } from '../engine/http.js'
import type { SourceRequest, UpstreamSource } from '../engine/upstream-source.js'
import type { ChildServer } from './child-server.js'
import type { JsonRpcId } from '../mcp/mcp-request.js'
import { readStdioLine, withMeta } from './json-rpc-line.js'
import { RequestCancel } from './request-cancel.js'
import { spliceMeta } from './splice-meta.js'

/** A request the stdio front door made: its line is at hand (no stream to read it from). */
export interface StdioSourceRequest extends SourceRequest {
  readonly line?: Buffer
  /** The line's message, already parsed (it is changed here: the call id goes into its `_meta`). */
  readonly message?: Record<string, unknown>
  /** How the request is cancelled, without an AbortSignal made for it (absent: `signal`). */
  readonly cancel?: RequestCancel
}

const JSON_HEAD = { 'content-type': 'application/json' } as const

export function childSource(child: ChildServer): UpstreamSource {
  return {
    kind: 'stdio',
    routesItself: true,
    begin: (request) => ({ forward: (options) => forward(child, request as StdioSourceRequest, options) }) satisfies UpstreamExchange,
  }
}

async function forward(child: ChildServer, request: StdioSourceRequest, options: ForwardOptions): Promise<UpstreamResponse> {
  const line = request.line ?? (await readAll(request.takeBody()))
  // The body is forwarded at once and whole: observers see it as a proxy's would.
  options.onRequestBody?.(line)
  options.onRequestBody?.(null)
  const message = request.message ? { id: request.message.id as JsonRpcId, message: request.message } : readStdioLine(line)
  // The front door makes exchanges of requests only; anything else would wait for an answer that never comes.
  if ('kind' in message && message.kind !== 'request') throw Object.assign(new Error('not a JSON-RPC request'), { code: 'MCP_NOT_A_REQUEST' })
  if (!('id' in message)) throw Object.assign(new Error('not a JSON-RPC request'), { code: 'MCP_NOT_A_REQUEST' })
  const answer = child.answer(message.id, request.cancel ?? cancelOf(request.signal))
  // A fault may end the exchange without reading the answer (crash): its failure is no one's then.
  answer.catch(() => undefined)
  const call = options.setHeaders[HEADER_CALL]
  // Spliced into the line as it came (no second serialisation of a large request), else serialised.
  child.write(call === undefined ? line : (spliceMeta(line, message.message, HEADER_CALL, call) ?? withMeta(message.message, HEADER_CALL, call)))
  const body = new AnswerBody(answer)
  return { status: 200, headers: JSON_HEAD, body, tap: (listener) => body.tap(listener) }
}

type Tap = (chunk: Uint8Array | null, error?: Error) => void

/**
 * The body of one answer: the single line the server writes. Tap-able, so the flow observes it
 * without wrapping it in a generator of its own, and `take()` hands it to the stdio relay without
 * iterating (each async generator step was a few microtasks on every call).
 */
export class AnswerBody implements AsyncIterable<Uint8Array> {
  readonly #answer: Promise<Buffer>
  #taps: Tap[] = []
  #ended = false

  constructor(answer: Promise<Buffer>) {
    this.#answer = answer
  }

  tap(listener: Tap): void {
    this.#taps.push(listener)
  }

  /** The line, once written (taps hear it); `end()` once it was handed on. */
  async take(): Promise<Buffer> {
    let line: Buffer
    try {
      line = await this.#answer
    } catch (error) {
      this.#end(error as Error)
      throw error
    }
    for (const tap of this.#taps) tap(line)
    return line
  }

  /** The body was read to its end (or given up on): taps hear the end once. */
  end(): void {
    this.#end()
  }

  #end(error?: Error): void {
    if (this.#ended) return
    this.#ended = true
    for (const tap of this.#taps) {
      if (error) tap(null, error)
      else tap(null)
    }
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<Uint8Array> {
    try {
      yield await this.take()
    } finally {
      this.end()
    }
  }
}

/** A cancel that follows `signal` (a source request another front door made). */
function cancelOf(signal: AbortSignal): RequestCancel {
  const cancel = new RequestCancel()
  if (signal.aborted) cancel.abort(signal.reason as Error)
  else signal.addEventListener('abort', () => cancel.abort(signal.reason as Error), { once: true })
  return cancel
}

async function readAll(body: Readable | null): Promise<Buffer> {
  if (!body) return Buffer.alloc(0)
  const chunks: Buffer[] = []
  for await (const chunk of body) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks)
}
