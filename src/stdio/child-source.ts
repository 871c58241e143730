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
import { spliceMeta } from './splice-meta.js'

/** A request the stdio front door made: its line is at hand (no stream to read it from). */
export interface StdioSourceRequest extends SourceRequest {
  readonly line?: Buffer
  /** The line's message, already parsed (it is changed here: the call id goes into its `_meta`). */
  readonly message?: Record<string, unknown>
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
  const answer = child.answer(message.id, request.signal)
  // A fault may end the exchange without reading the answer (crash): its failure is no one's then.
  answer.catch(() => undefined)
  const call = options.setHeaders[HEADER_CALL]
  // Spliced into the line as it came (no second serialisation of a large request), else serialised.
  child.write(call === undefined ? line : (spliceMeta(line, message.message, HEADER_CALL, call) ?? withMeta(message.message, HEADER_CALL, call)))
  return { status: 200, headers: JSON_HEAD, body: answered(answer) }
}

async function* answered(answer: Promise<Buffer>): AsyncGenerator<Uint8Array> {
  yield await answer
}

async function readAll(body: Readable | null): Promise<Buffer> {
  if (!body) return Buffer.alloc(0)
  const chunks: Buffer[] = []
  for await (const chunk of body) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks)
}
