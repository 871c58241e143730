/**
 * The legacy HTTP+SSE MCP transport (spec 2024-11-05): the client GETs an event stream whose
 * first event, `endpoint`, names the URI it must POST its messages to (the TS SDK server adds
 * `?sessionId=`); each POST is answered `202 Accepted` and the JSON-RPC answer arrives on the GET
 * stream as `event: message`. The proxy learns the endpoints from the streams it relays (no
 * configuration), names the POSTs as MCP messages, and points faults on an answer at that
 * answer's event in the session's stream (`legacySseTransport`).
 *
 * Bounded: at most `MAX_ENDPOINTS` endpoints and `MAX_SESSIONS` live streams are remembered (the
 * oldest is forgotten first); a stream leaves the registry when it ends.
 *
 * @see docs/mcp.md#legacy-httpsse-transport
 */
import type { ExchangeTransport, UpstreamResponse } from '../engine/exchange-transport.js'
import type { Exchange } from '../engine/exchange.js'
import { type HeaderMap, headerValue } from '../engine/http.js'
import type { Fault, FaultOutcome } from '../engine/faults/fault.js'
import { LegacySseStream } from './legacy-sse-stream.js'
import type { JsonRpcId, McpRequest } from './mcp-request.js'

export const MAX_ENDPOINTS = 100
export const MAX_SESSIONS = 1000

/** Query parameters that carry the session: the TS SDK's `sessionId`, the Python SDK's `session_id`. */
const SESSION_PARAMS = ['sessionId', 'session_id']


function sessionParam(url: URL): string | null {
  if (url.search === '') return null
  for (const name of SESSION_PARAMS) {
    const value = url.searchParams.get(name)
    if (value) return value
  }
  return null
}

/** Add `key` to a bounded insertion-ordered collection, forgetting the oldest past `max`. */
function remember<K, V>(map: Map<K, V>, key: K, value: V, max: number): void {
  map.delete(key)
  if (map.size >= max) map.delete(map.keys().next().value as K)
  map.set(key, value)
}

/** The legacy endpoints and live session streams one proxy has seen. */
export class LegacySseSessions {
  /** `origin + path` of each endpoint learned from an `endpoint` event. */
  readonly #endpoints = new Map<string, true>()
  /** `origin session` → the stream that carries that session's answers. */
  readonly #streams = new Map<string, LegacySseStream>()

  /** Whether a POST goes to a learned endpoint (its body is then read as MCP: `McpDetector.mayCarry`). */
  isEndpoint(url: URL): boolean {
    return this.#endpoints.size > 0 && this.#endpoints.has(url.origin + url.pathname)
  }

  /** The live stream of a session, if one is known. */
  stream(origin: string, session: string): LegacySseStream | null {
    const stream = this.#streams.get(`${origin} ${session}`)
    return stream?.live ? stream : null
  }

  /** Relay an event-stream answer to a GET through a `LegacySseStream`: its first event may name an endpoint. */
  watch(url: URL, upstream: UpstreamResponse): UpstreamResponse {
    let key: string | null = null
    const stream: LegacySseStream = new LegacySseStream(
      upstream.body,
      (event, data) => {
        if (event !== 'endpoint') return
        let endpoint: URL
        try {
          endpoint = new URL(data.trim(), url)
        } catch {
          return
        }
        remember(this.#endpoints, endpoint.origin + endpoint.pathname, true, MAX_ENDPOINTS)
        const session = sessionParam(endpoint)
        if (session === null) return
        key = `${endpoint.origin} ${session}`
        remember(this.#streams, key, stream, MAX_SESSIONS)
      },
      () => {
        if (key !== null && this.#streams.get(key) === stream) this.#streams.delete(key)
      },
    )
    // Observers (recorders) still see the upstream's own bytes.
    return { status: upstream.status, headers: upstream.headers, body: stream, ...(upstream.tap ? { tap: upstream.tap.bind(upstream) } : {}) }
  }
}

/**
 * `mcp` as a legacy message when it is one: POSTed with the session in the query and without the
 * Streamable HTTP transport's `Accept: text/event-stream`. Its session is then the query's.
 */
export function legacyMcpRequest(mcp: McpRequest | null, url: URL, headers: HeaderMap): McpRequest | null {
  if (mcp === null || mcp.session !== null || (headerValue(headers, 'accept') ?? '').includes('text/event-stream')) return mcp
  const session = sessionParam(url)
  return session === null ? mcp : { ...mcp, session, legacySse: true }
}

/** Kinds that act on an answer only once the POST was answered: the answer is held from before the POST is forwarded (it may come first). */
const HELD_UNTIL_DECIDED = new Set(['response_lost', 'schema_drift'])
const JSON_HEADERS = { 'content-type': 'application/json' }
const encoder = new TextEncoder()
const decoder = new TextDecoder()

const ACCEPTED: FaultOutcome['action'] = { type: 'respond', status: 202, headers: { 'content-type': 'text/plain; charset=utf-8' }, body: encoder.encode('Accepted') }
const NOT_TRIGGERED: FaultOutcome = { action: { type: 'pass' }, injected: false }

/**
 * How a fault on a legacy message acts on its answer's event, or null when it acts on the POST
 * as it is (rate_limit, unavailable, timeout, reset, replace: the client's POST fails; the stream
 * kinds act on the POST's own `202` answer).
 * With no live stream for the session the answer cannot be reached: not triggered, forwarded.
 */
function legacyFault(fault: Fault, stream: LegacySseStream | null, id: JsonRpcId | null, exchange: Exchange): Fault | null {
  switch (fault.type) {
    case 'tool_error':
    case 'rpc_error':
      // The answer the fault writes goes into the stream; the POST is accepted as the server would.
      return {
        ...fault,
        async apply(context) {
          if (!stream || id === null) return NOT_TRIGGERED
          const outcome = await fault.apply(context)
          if (outcome.action.type !== 'respond' || outcome.action.body === null) return outcome
          stream.inject(id, outcome.action.body)
          return { ...outcome, action: ACCEPTED }
        },
      }
    case 'response_lost':
      // The answer was held from before the POST was forwarded (it may come before the 202).
      return {
        ...fault,
        async apply({ response }) {
          if (!stream || id === null) return NOT_TRIGGERED
          if (!response || response.status < 200 || response.status > 299) {
            stream.release(id)
            return NOT_TRIGGERED
          }
          stream.lose(id)
          return { action: { type: 'pass' }, injected: true }
        },
      }
    case 'latency':
      // The POST goes on at once; its answer event waits.
      return {
        ...fault,
        async apply({ rule, clock }) {
          if (!stream || id === null) return NOT_TRIGGERED
          stream.alter(id, async (data) => {
            await clock.sleep(rule.delay)
            return data
          })
          return { action: { type: 'pass' }, injected: true }
        },
      }
    case 'schema_drift':
      // The fault reads the answer event's message as it would a JSON answer; it counts once it changed one.
      return {
        ...fault,
        async apply(context) {
          const { response } = context
          if (!stream || id === null) return NOT_TRIGGERED
          if (!response || response.status < 200 || response.status > 299) {
            stream.release(id)
            return NOT_TRIGGERED
          }
          stream.alter(id, async (data) => {
            const outcome = await fault.apply({ ...context, response: { status: 200, headers: JSON_HEADERS, readBody: async () => encoder.encode(data) } })
            if (!outcome.injected || outcome.action.type !== 'respond' || outcome.action.body === null) return data
            exchange.markInjected()
            return decoder.decode(outcome.action.body)
          })
          return NOT_TRIGGERED
        },
      }
    default:
      return null
  }
}

/** `io`, with a transport of an exchange on the legacy transport: its GET stream or one of its POSTs. Other exchanges get `io` itself. */
export function legacySseTransport(sessions: LegacySseSessions, exchange: Exchange, io: ExchangeTransport): ExchangeTransport {
  const request = exchange.request
  const mcp = request.mcp
  if (mcp?.legacySse && mcp.session !== null) {
    const stream = sessions.stream(exchange.url.origin, mcp.session)
    const id = mcp.id
    const adapted = exchange.fault && legacyFault(exchange.fault, stream, id, exchange)
    if (adapted) exchange.adaptFault(adapted)
    if (!stream || id === null) return io
    stream.watch(id, exchange.record?.mcp ?? null)
    if (!exchange.fault || !HELD_UNTIL_DECIDED.has(exchange.fault.type)) return io
    stream.hold(id)
    // An exchange that ended before its fault decided (the upstream unreachable, the client gone) lets the answer go.
    return delegate(io, {
      settle() {
        stream.releaseUndecided(id)
        io.settle?.()
      },
    })
  }
  if (request.method !== 'GET' || !(headerValue(request.headers, 'accept') ?? '').includes('text/event-stream')) return io
  // A GET for an event stream leaves the fast path: its first event is looked at.
  return delegate(io, {
    async forward(options) {
      const answer = await io.forward(options)
      if ('action' in answer || !(headerValue(answer.headers, 'content-type') ?? '').toLowerCase().startsWith('text/event-stream')) return answer
      return sessions.watch(exchange.url, answer)
    },
  })
}

/** `io` with `forward` or `settle` replaced; everything else as it is, but no fast path. */
function delegate(io: ExchangeTransport, own: Pick<ExchangeTransport, 'forward'> | Pick<ExchangeTransport, 'settle'>): ExchangeTransport {
  return {
    get signal() {
      return io.signal
    },
    ...(io.propagatesContext ? { propagatesContext: true } : {}),
    forward: 'forward' in own ? own.forward : (options) => io.forward(options),
    respond: (response) => io.respond(response),
    relay: (upstream) => io.relay(upstream),
    reset: () => io.reset(),
    ...(io.upstreamFailed ? { upstreamFailed: (method: string, code: string) => io.upstreamFailed!(method, code) } : {}),
    ...(io.observeRequestBody ? { observeRequestBody: (onChunk: (chunk: Uint8Array | null) => void) => io.observeRequestBody!(onChunk) } : {}),
    ...(io.open ? { open: (status: number, headers: HeaderMap) => io.open!(status, headers) } : {}),
    ...('settle' in own ? { settle: own.settle } : io.settle ? { settle: () => io.settle!() } : {}),
  }
}
