/**
 * The contract between the exchange flow and what it drives, in two halves (docs/architecture.md):
 * - the **upstream half** (`UpstreamExchange`): where the response comes from: the proxy's live
 *   upstream pool or a user's undici dispatcher, msw's passthrough, a cassette (`upstream-source.ts`);
 * - the **client half** (`ClientSink`): how the client is answered and how the engine's actions
 *   (respond, reset, stream) are carried out: a socket, an interceptor's request controller, memory.
 * A transport is one of each (`ExchangeTransport`). Types and constants only, so transports and
 * stream relays depend on it, not on the flow.
 */
import type { BodySource } from './body.js'
import type { FaultAction } from './faults/fault.js'
import type { HeaderMap } from './http.js'
import type { ResponseWriter } from './streams/response-writer.js'
import type { StreamTransform } from './streams/stream-transform.js'

export interface UpstreamResponse {
  readonly status: number
  readonly headers: HeaderMap
  /** The body as it arrives (still content-encoded). */
  readonly body: BodySource
  /**
   * Observe every body chunk as it arrives (`null` at the end), whoever consumes the body.
   * Optional: without it the flow wraps `body` to observe it.
   */
  tap?(listener: (chunk: Uint8Array | null, error?: Error) => void): void
  /**
   * How the body must reach the client, when the source decides it (a cassette plays a recorded
   * stream at its pace and ends it as it ended: cut, reset). The flow relays through it as through
   * a stream fault's transform. Absent: the body is relayed as it comes.
   */
  readonly playback?: StreamTransform
  /**
   * Let the body outlive the client: it no longer stops when the client leaves, so the flow can
   * read on after a fault cut the client (stream-relay.ts). Returns how to stop it. Absent: not read on.
   */
  readonly outliveClient?: () => (reason: Error) => void
}

/**
 * A source's answer that is not a response: an action carried out as a fault's would be (a
 * cassette's recorded reset, a replay mismatch answered 422). No upstream head was seen.
 */
export interface SourceAction {
  readonly action: Exclude<FaultAction, { type: 'pass' } | { type: 'stream' }>
}

export interface ForwardOptions {
  /** Headers to set on the forwarded request. */
  readonly setHeaders: Readonly<Record<string, string>>
  /** Headers to remove from the forwarded request (lowercase). */
  readonly removeHeaders: readonly string[]
  /** Called with each request body chunk as it is forwarded, then `null` (recorders use it). */
  readonly onRequestBody?: (chunk: Uint8Array | null) => void
}

/** The upstream half of a transport: where one exchange's response comes from. */
export interface UpstreamExchange {
  /** Send the request upstream; resolve when the response head arrives (or with the action that replaces it). */
  forward(options: ForwardOptions): Promise<UpstreamResponse | SourceAction>
  /**
   * The upstream could not be reached (`code`): the transport may log it, and returns the URL the
   * request was going to, redacted, for the 502 body. Optional: without it the body names the
   * request's own URL (in-process they are the same).
   */
  upstreamFailed?(method: string, code: string): string
  /**
   * Run `forward` inside the exchange's async context, so in-process tool handlers can call
   * `storm.effect()` without a call id.
   * @note Off for sockets: on Node 20, AsyncLocalStorage turns on promise hooks process-wide,
   * which costs every proxied request; a tool server behind the proxy uses the header instead.
   */
  readonly propagatesContext?: boolean
  /**
   * The exchange is over. Called once by the flow; a source that claimed something when the
   * exchange began (a cassette position) and was never asked to `forward` gives it back.
   */
  settle?(): void
}

/** The client half of a transport: answers the client and carries out the engine's actions. */
export interface ClientSink {
  /** Aborts when the client goes away. */
  readonly signal: AbortSignal
  /** Answer the client with a complete response. Resolves when it was handed over. */
  respond(response: { status: number; headers: Record<string, string>; body: Uint8Array | null }): Promise<void>
  /** Stream the upstream response to the client. Resolves when the client got all of it. */
  relay(response: UpstreamResponse): Promise<void>
  /** Make the client see a connection reset. */
  reset(): void
  /**
   * Read the request body now, for `onChunk` (then `null`), whether or not it is forwarded later:
   * what is not yet forwarded waits in a bounded buffer (backpressure holds the rest), and when a
   * fault answers instead, the rest is read and dropped. Optional: without it, `onChunk` sees the
   * body only as it is forwarded.
   */
  observeRequestBody?(onChunk: (chunk: Uint8Array | null) => void): void
  /**
   * Start a response the flow writes piece by piece (stream faults; see `streams/stream-relay.ts`).
   * The head goes out at once; `headers` are end-to-end headers without a content length.
   * Optional: without it a stream fault relays the body unchanged.
   */
  open?(status: number, headers: HeaderMap): ResponseWriter
  /**
   * Optional capability (as Toxiproxy's optional interfaces): a fast path for exchanges no fault
   * or observer touches: forward and relay in one go, reporting through `hooks`. A sink offers it
   * only over a source it can drive directly (the socket sink over the live pool); it skips the
   * promise hops of the general flow (forward → relay), which on the proxy's hot path cost as much
   * as the rest of the exchange.
   */
  passThrough?(options: ForwardOptions, hooks: PassThroughHooks): void
}

/** One exchange's transport: a client sink with the upstream half it forwards to. */
export interface ExchangeTransport extends UpstreamExchange, ClientSink {}

/** What a pass-through transport reports back; the flow decides what to record. */
export interface PassThroughHooks {
  /** The upstream answered with this head. Returns where to show each body chunk as it is written to the client, when the flow wants them (an event stream, for its final event). */
  upstreamHead(status: number, headers: HeaderMap): ((chunk: Uint8Array) => void) | undefined
  /**
   * The upstream failed before its head. Returns the response the transport sends instead (an
   * unreachable upstream's 502), or null when the flow passed the failure on itself (an upstream
   * that broke off after receiving the request: the client was reset) and nothing is sent.
   */
  failedBeforeHead(error: unknown): { status: number; headers: Record<string, string>; body: Uint8Array } | null
  /** The exchange ended for the client (`error`: the upstream broke off mid-body, the client saw a reset). */
  done(outcome: 'response' | 'reset' | 'cancelled' | 'error', status: number | null, error?: string): void
}
