/**
 * The exchange observer that completes `call.mcp` in the report: the session the server assigned
 * (from `Mcp-Session-Id` on its answer) and the outcome the client was answered (result,
 * `isError`, error code), read from the answer as it passes; and, given a catalog, the tools'
 * output schemas from `tools/list` answers (for `schema_drift`). It wants MCP exchanges only, so
 * other traffic keeps the transports' fast path. On in the proxy and in `intercept()`.
 */
import type { Exchange } from '../engine/exchange.js'
import { type HeaderMap, headerValue } from '../engine/http.js'
import type { ExchangeObserver } from '../engine/exchange-flow.js'
import { createMcpAnswerReader, type McpAnswer } from './mcp-answer-reader.js'
import { endpointOf, MAX_TOOLS_LIST_BYTES, type ToolCatalog } from './tool-catalog.js'
import type { InputRounds } from './input-rounds.js'


export function createMcpObserver(tools?: ToolCatalog, rounds?: InputRounds): ExchangeObserver {
  // `tools/list` answers, held (bounded) until they end, to learn the tools' output schemas.
  const toolLists = new WeakMap<Exchange, { chunks: Uint8Array[]; size: number }>()
  const upstreamReaders = new WeakMap<Exchange, (chunk: Uint8Array | null) => void>()
  const clientReaders = new WeakMap<Exchange, (chunk: Uint8Array | null) => void>()
  // The upstream's answer counts once the client is known to get it unchanged (relayed): a small
  // body may have been read whole before that is known, and a lost response never is.
  const upstreamAnswers = new WeakMap<Exchange, McpAnswer>()
  const relayed = new WeakSet<Exchange>()

  const record = (exchange: Exchange, answer: McpAnswer) => {
    const call = exchange.record?.mcp
    if (!call) return
    call.outcome = answer.outcome
    call.errorCode = answer.errorCode
    // The client got a request for input: its retry with the input is this call's next round.
    const request = exchange.request.mcp
    if (answer.inputRequired && rounds && request) rounds.asked(request, { exchangeId: exchange.id, call })
  }
  const reader = (exchange: Exchange, headers: HeaderMap, onAnswer: (answer: McpAnswer) => void) => {
    const id = exchange.request.mcp?.id
    if (id === null || id === undefined) return null
    // A compressed answer is not read: MCP servers rarely compress, and the outcome stays unknown.
    const encoding = (headerValue(headers, 'content-encoding') ?? '').toLowerCase()
    if (encoding !== '' && encoding !== 'identity') return null
    return createMcpAnswerReader(id, (headerValue(headers, 'content-type') ?? '').toLowerCase(), onAnswer)
  }

  return {
    wants: (exchange) => exchange.record?.mcp != null,
    onUpstreamHead(exchange, _status, headers) {
      const call = exchange.record?.mcp
      if (!call) return
      const session = headerValue(headers, 'mcp-session-id') ?? ''
      if (call.session === null && session !== '') call.session = session.slice(0, 200)
      const read = reader(exchange, headers, (answer) => {
        if (relayed.has(exchange)) record(exchange, answer)
        else upstreamAnswers.set(exchange, answer)
      })
      if (read) upstreamReaders.set(exchange, read)
      if (tools && exchange.request.mcp?.method === 'tools/list' && headerValue(headers, 'content-encoding') === undefined) toolLists.set(exchange, { chunks: [], size: 0 })
    },
    onUpstreamBody(exchange, chunk) {
      upstreamReaders.get(exchange)?.(chunk)
      const list = toolLists.get(exchange)
      if (!list) return
      if (chunk === null) {
        toolLists.delete(exchange)
        tools?.learn(endpointOf(exchange.url), Buffer.concat(list.chunks, list.size))
      } else if (list.size + chunk.length > MAX_TOOLS_LIST_BYTES) toolLists.delete(exchange)
      else {
        list.chunks.push(chunk)
        list.size += chunk.length
      }
    },
    onClientHead(exchange, _status, headers, sameAsUpstream) {
      if (sameAsUpstream) {
        relayed.add(exchange)
        const answer = upstreamAnswers.get(exchange)
        if (answer) record(exchange, answer)
        return
      }
      const read = reader(exchange, headers, (answer) => record(exchange, answer))
      if (read) clientReaders.set(exchange, read)
    },
    onClientBody(exchange, chunk) {
      clientReaders.get(exchange)?.(chunk)
    },
  }
}

type Hook = Exclude<keyof ExchangeObserver, 'wants' | 'attached'>
const HOOKS: readonly Hook[] = ['onStart', 'onRequestBody', 'onRequestBodyRead', 'onUpstreamHead', 'onUpstreamBody', 'onClientHead', 'onClientBody', 'onFinished']

/**
 * `inner` plus MCP evidence. Unlike `combineObservers`, it costs other exchanges one property
 * read per hook (no per-exchange bookkeeping), so the proxy's hot path stays as it was.
 */
export function withMcpEvidence(inner: ExchangeObserver | undefined, tools?: ToolCatalog, rounds?: InputRounds): ExchangeObserver {
  const mcp = createMcpObserver(tools, rounds)
  // MCP exchanges the inner observer wants too (asked once, at `wants`).
  const shared = new WeakSet<Exchange>()
  const observer: ExchangeObserver = {
    wants(exchange) {
      const innerWants = inner !== undefined && inner.wants?.(exchange) !== false
      if (exchange.request.mcp == null) return innerWants
      if (innerWants) shared.add(exchange)
      return mcp.wants!(exchange) || innerWants
    },
  }
  for (const hook of HOOKS) {
    const own = mcp[hook] as ((exchange: Exchange, ...args: unknown[]) => void) | undefined
    const theirs = inner?.[hook] as ((exchange: Exchange, ...args: unknown[]) => void) | undefined
    // A hook's presence changes the flow (a request-body tap, an early read): only define those someone has.
    if (!own && !theirs) continue
    ;(observer as Record<Hook, (exchange: Exchange, ...args: unknown[]) => void>)[hook] = (exchange, ...args) => {
      if (exchange.request.mcp == null) return theirs?.(exchange, ...args)
      own?.(exchange, ...args)
      if (shared.has(exchange)) theirs?.(exchange, ...args)
    }
  }
  return observer
}
