/**
 * The transport of one stdio exchange: the client sink is the wrapper's stdout, where the answer
 * goes as one JSON-RPC line; the upstream half is the source's (the server, or a cassette).
 *
 * What an HTTP-shaped action means on stdio (adapted here, not in the kernel):
 * - `respond`: the body, when it is a JSON-RPC answer to the request (MCP's faults, a drifted or
 *   replayed answer); else the JSON-RPC error standing for it (json-rpc-line.ts `answerLine`):
 *   `timeout`'s 504 is the SDKs' request timeout `-32001`.
 * - `reset`: the connection ends as a crashed server's does (the server is killed, the wrapper
 *   exits as it did), or with `lostAnswer: 'silent'` only this answer is dropped and the client
 *   waits. A `crash` always ends it. `timeout` with `silent` sends nothing either.
 * - `session_expired` restarts the server behind the connection before it answers (the fault is
 *   adapted here, as the legacy SSE transport adapts its kinds).
 */
import { Readable } from 'node:stream'
import { setTimeout as delay } from 'node:timers/promises'
import type { Exchange } from '../engine/exchange.js'
import type { ExchangeTransport, ForwardOptions, UpstreamExchange, UpstreamResponse } from '../engine/exchange-transport.js'
import type { Fault, FaultOutcome } from '../engine/faults/fault.js'
import type { UpstreamSource } from '../engine/upstream-source.js'
import { SESSION_NOT_FOUND } from '../mcp/faults/session-expired.js'
import { rpcErrorAnswer } from '../mcp/json-rpc-answer.js'
import type { JsonRpcId } from '../mcp/mcp-request.js'
import type { ChildServer } from './child-server.js'
import { AnswerBody, type StdioSourceRequest } from './child-source.js'
import type { RequestCancel } from './request-cancel.js'
import type { StoredServerMessage } from '../cassette/format/cassette-schema.js'
import type { ServerMessagesRequest } from '../cassette/replay/replay-source.js'
import { answerLine } from './json-rpc-line.js'
import type { JsonValue } from '../json/canonical-json.js'
import { errorBody } from '../error-body.js'
import { REPLAY_REFUSAL_STATUS } from '../cassette/replay/replay-refusal.js'
import { serverRequestMethod } from '../cassette/format/server-request.js'

/** How a stdio exchange is addressed in reports and cassettes: one MCP endpoint, as a reverse proxy stores it. */
export const STDIO_URL = new URL('http://stdio/mcp')
export const STDIO_PATH = '/mcp'
/**
 * The head every stdio message gets: what the MCP plug-in reads as a Streamable HTTP POST, so the
 * message names the route (`tools/call write_file`) as over HTTP. Its session is the connection:
 * `stdio-<launch>`, the wrapper's launch in its run (a reconnecting agent's next launch continues
 * a run with `--state-dir`), so the report tells its launches apart.
 */
export function stdioHeaders(launch: number): Readonly<Record<string, string>> {
  return Object.freeze({ 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-session-id': `stdio-${launch}` })
}

/** What a lost answer (`reset`) does on stdio. */
export type LostAnswer = 'close' | 'silent'

/** What the exchanges share: where answers go, how the connection ends, the server to restart. */
export interface StdioLink {
  /** Write one line to the client (the wrapper's stdout). */
  write(line: Uint8Array): void
  /** End the connection as a crashed server's ends (`exchange` lost its answer). */
  crash(exchange: Exchange): void
  readonly lostAnswer: LostAnswer
  /** The server behind the source, if one runs (a replay may have none). */
  readonly child: ChildServer | null
  /** The client's next answer to request `id` (one the wrapper sent it, in a replay), until `signal` aborts: it is not relayed to the server. */
  expectAnswer(id: JsonRpcId, signal: AbortSignal): Promise<JsonValue>
}

export interface StdioRequest {
  readonly id: JsonRpcId
  readonly line: Buffer
  /** The line's message, parsed. */
  readonly message: Record<string, unknown>
  /** Aborts when the client cancels the request (`notifications/cancelled`) or leaves. */
  readonly cancel: RequestCancel
}

/** The transport of `exchange`, answering `request` over `link`, its answer from `source` (`live` behind it). */
export function stdioTransport(exchange: Exchange, request: StdioRequest, link: StdioLink, source: UpstreamSource, live: UpstreamSource): ExchangeTransport {
  if (exchange.fault?.type === 'session_expired') exchange.adaptFault(restartingExpiry(exchange.fault, link.child))
  const { id, line, cancel, message } = request
  // A replay's recorded server messages for this call: sent before its answer, each as long after
  // the call began as it came when recorded (a client handles them as they arrive: sent in one
  // burst with the answer, the TypeScript SDK 1.32 client drops every progress update). A request
  // (sampling, elicitation) waits for the client's answer before anything else goes, as the server
  // waited; an answer unlike the recorded one withholds the recorded answer (`withheld`: why).
  let messages: readonly StoredServerMessage[] = []
  let answered: ((index: number, live: JsonValue | null) => string | null) | null = null
  let withheld: string | null = null
  const began = performance.now()
  const sendServerMessages = async () => {
    const recorded = messages
    messages = []
    for (const { at, line, index, asks } of replayedMessages(recorded, message)) {
      const wait = began + at * 1000 - performance.now()
      if (wait > 0) await delay(wait, undefined, { signal: cancel.signal })
      // Waited for before it is sent: the answer cannot come first.
      const answer = asks === undefined ? null : link.expectAnswer(asks, cancel.signal)
      link.write(line)
      if (answer === null) continue
      // Not answered while the call ran when recorded: the call's answer does not wait for it.
      if (recorded[index]?.answer === undefined) {
        answer.catch(() => undefined)
        continue
      }
      let live: JsonValue
      try {
        live = await answer
      } catch (error) {
        // The call ended first (cancelled, the client left): the verdict hears of it, the call is over anyway.
        answered?.(index, null)
        throw error
      }
      withheld = answered?.(index, live) ?? null
      if (withheld !== null) return
    }
  }
  /** Answer the call with the error standing for `why` instead of its recorded answer. */
  const withhold = (why: string) => {
    const answer = answerLine(id, REPLAY_REFUSAL_STATUS, Buffer.from(JSON.stringify(errorBody('cassette_mismatch', 'ERR_CASSETTE_MISMATCH', why))))
    link.write(answer.line)
    noteError(exchange, answer.error)
  }
  const sourceRequest: StdioSourceRequest & ServerMessagesRequest = {
    exchange,
    method: 'POST',
    rawUrl: STDIO_PATH,
    headers: exchange.request.headers as Record<string, string>,
    upstream: null,
    // Made only when read (a cassette, a fault's wait): a plain call never needs one.
    get signal() {
      return cancel.signal
    },
    cancel,
    line,
    message,
    replayServerMessages(recorded, check) {
      messages = recorded
      answered = check
    },
    takeBody(onChunk) {
      onChunk?.(line)
      onChunk?.(null)
      return Readable.from([line])
    },
  }
  const upstream: UpstreamExchange = source.begin(sourceRequest, live)
  return {
    get signal() {
      return cancel.signal
    },
    forward: (options: ForwardOptions) => upstream.forward(options),
    ...(upstream.upstreamFailed ? { upstreamFailed: (method: string, code: string) => upstream.upstreamFailed!(method, code) } : {}),
    ...(upstream.settle ? { settle: () => upstream.settle!() } : {}),
    async respond({ status, body }) {
      if (link.lostAnswer === 'silent' && exchange.fault?.type === 'timeout') return
      const answer = answerLine(id, status, body)
      await sendServerMessages()
      if (withheld !== null) return withhold(withheld)
      link.write(answer.line)
      // The observers saw the HTTP-shaped answer; the client got the JSON-RPC error standing for it.
      noteError(exchange, answer.error)
    },
    async relay(response: UpstreamResponse) {
      // The server's answer line, handed on as it came.
      if (response.body instanceof AnswerBody) {
        const answer = response.body
        try {
          link.write(await answer.take())
        } finally {
          answer.end()
        }
        return
      }
      const chunks: Uint8Array[] = []
      for await (const chunk of response.body) chunks.push(chunk)
      await sendServerMessages()
      if (withheld !== null) return withhold(withheld)
      if (chunks.length) link.write(chunks.length === 1 ? (chunks[0] as Uint8Array) : Buffer.concat(chunks))
    },
    reset() {
      if (link.lostAnswer === 'silent' && exchange.fault?.type !== 'crash') return
      link.crash(exchange)
    },
  }
}

/** The client got the JSON-RPC error `code` (null: none) for the call: the report's MCP call says so. */
function noteError(exchange: Exchange, code: number | null): void {
  const call = exchange.record?.mcp
  if (code !== null && call) {
    call.outcome = 'error'
    call.errorCode = code
  }
}

/**
 * The recorded server messages as lines for the live call, with their place in `recorded` and, for
 * a request, its id: a progress notification that named the recorded call's token names the live
 * call's (dropped when the live call asked for no progress: its client would not know the token).
 */
function replayedMessages(recorded: readonly StoredServerMessage[], request: Record<string, unknown>): { at: number; line: Buffer; index: number; asks?: JsonRpcId }[] {
  if (!recorded.length) return []
  const token = (request.params as { _meta?: { progressToken?: unknown } } | undefined)?._meta?.progressToken
  const lines: { at: number; line: Buffer; index: number; asks?: JsonRpcId }[] = []
  recorded.forEach(({ at, message, progress }, index) => {
    if (!progress) {
      const asks = serverRequestMethod(recorded[index] as StoredServerMessage) === null ? undefined : ((message as { id: JsonRpcId }).id)
      lines.push({ at, line: Buffer.from(JSON.stringify(message)), index, ...(asks === undefined ? {} : { asks }) })
      return
    }
    if (token === undefined) return
    const notification = message as { params?: Record<string, unknown> }
    lines.push({ at, line: Buffer.from(JSON.stringify({ ...notification, params: { ...notification.params, progressToken: token } })), index })
  })
  return lines
}

const NOT_TRIGGERED: FaultOutcome = { action: { type: 'pass' }, injected: false }

/**
 * `session_expired` over stdio: the server restarts (its state is lost) and the call gets the
 * JSON-RPC error a server that lost the session sends; it never reached a server. With no server
 * (a replay), only the error.
 */
function restartingExpiry(fault: Fault, child: ChildServer | null): Fault {
  return {
    ...fault,
    async apply({ request }) {
      const id = request.mcp?.id
      if (id === null || id === undefined) return NOT_TRIGGERED
      await child?.restart()
      const { headers, body } = rpcErrorAnswer(id, SESSION_NOT_FOUND.code, SESSION_NOT_FOUND.message)
      return { action: { type: 'respond', status: 200, headers, body }, injected: true }
    },
  }
}
