/**
 * The one exchange flow both transports share. The transport supplies primitives (forward,
 * respond, relay, reset); this file decides when each fault phase runs and records what the
 * client really got.
 */
import { errorBody } from '../error-body.js'
import { exchangeContext } from './exchange-context.js'
import type { Exchange } from './exchange.js'
import { CONTROL_HEADERS, errorCode, flattenHeaders, HEADER_CALL, type HeaderMap, type ResponseView, retryAfterSeconds } from './http.js'
import type { FaultAction, FaultContext } from './faults/fault.js'
import { type ExchangeTransport, type ForwardOptions, type PassThroughHooks, type SourceAction, type UpstreamResponse } from './exchange-transport.js'
import { readBodyDecoded } from './body.js'
import { observeWriter } from './streams/response-writer.js'
import { relayStream, type RelayEnding } from './streams/stream-relay.js'
import { watchStreamEnd, type StreamEnd } from './streams/stream-end.js'

/** Refusal when the run's call budget is spent: a harness limit, not an injected fault. */
export const BUDGET_REFUSAL_STATUS = 503

/**
 * Observers see the bytes of every exchange: recorders (cassettes) and model-call metadata use
 * them. Every hook is optional. Bodies are observed as they travel (still content-encoded), never
 * buffered for the observer's sake. The transports' pass-through fast path is not used for the
 * exchanges an observer `wants`.
 */
/** Where an observer was given: a recorder stores what the CLI stores from there (origin-form URLs behind a reverse proxy). */
export interface ObserverFront {
  readonly source: 'proxy' | 'in-process'
  /** Reverse-mode targets (none: forward mode, or in-process). */
  readonly targets: readonly string[]
}

export interface ExchangeObserver {
  /** Told once, by the front door it was given to (`startProxy`), before any exchange. */
  attached?(front: ObserverFront): void
  /**
   * Whether this observer wants to see `exchange`, asked once before anything else (absent: yes).
   * An exchange no observer wants and no fault touches keeps the transports' fast path.
   */
  wants?(exchange: Exchange): boolean
  /** The exchange began (its request head is `exchange.request`). */
  onStart?(exchange: Exchange): void
  /** A request body chunk as it is forwarded upstream; `null` at its end. Not called when nothing is forwarded. */
  onRequestBody?(exchange: Exchange, chunk: Uint8Array | null): void
  /**
   * A request body chunk as it is read, forwarded or not (a fault that answers before the upstream
   * leaves it unforwarded: it is read anyway); `null` at its end. Model calls read the requested
   * model and stream flag here.
   */
  onRequestBodyRead?(exchange: Exchange, chunk: Uint8Array | null): void
  /** The upstream's answer: what it really said, also when the client never sees it (a lost response). */
  onUpstreamHead?(exchange: Exchange, status: number, headers: HeaderMap): void
  /** An upstream body chunk; `null` at its end (with `error` when it broke off). */
  onUpstreamBody?(exchange: Exchange, chunk: Uint8Array | null, error?: Error): void
  /**
   * What the client received. `sameAsUpstream` means the upstream body is relayed unchanged, so
   * its chunks are the client's too and `onClientBody` is not called.
   */
  onClientHead?(exchange: Exchange, status: number, headers: HeaderMap, sameAsUpstream: boolean): void
  /** A body chunk the client received that differs from the upstream's; `null` at its end. */
  onClientBody?(exchange: Exchange, chunk: Uint8Array | null): void
  /** The exchange ended; `exchange.record` says how (a reset has no client head). */
  onFinished?(exchange: Exchange): void
}

/** Run one exchange to its end. Never throws for transport failures: they are recorded. */
export function runExchange(exchange: Exchange, io: ExchangeTransport, wanting?: ExchangeObserver): Promise<void> | void {
  const observer = wanting?.wants?.(exchange) === false ? undefined : wanting
  if (io.passThrough && exchange.fault === null && exchange.record !== null && observer === undefined) {
    io.passThrough({ setHeaders: { [HEADER_CALL]: exchange.id }, removeHeaders: CONTROL_HEADERS }, passThroughHooks(exchange, io))
    return
  }
  return runFlow(exchange, io, observer)
}

function passThroughHooks(exchange: Exchange, io: ExchangeTransport): PassThroughHooks {
  let end: StreamEnd | null = null
  return {
    upstreamHead(status, headers) {
      recordUpstreamHead(exchange, status, headers)
      end = watchStreamEnd(exchange, headers)
      return end ? (chunk) => end?.push(chunk) : undefined
    },
    failedBeforeHead(error) {
      const ending = passOnBreak(exchange, error, io) ?? unreachable(exchange, error, io)
      exchange.finish(ending.outcome, ending.status, ending.error)
      return ending.reply ?? null
    },
    done(outcome, status, error) {
      // A client that leaves once its stream's final event reached it got the whole answer.
      if (outcome === 'cancelled' && end?.reached) return exchange.finish('response', status)
      exchange.finish(outcome, status, error ?? (outcome === 'reset' ? 'ECONNRESET' : outcome === 'cancelled' ? 'CLIENT_ABORTED' : null))
    },
  }
}

/** The upstream answered: it was reached, and it may have advertised a retry delay. */
function recordUpstreamHead(exchange: Exchange, status: number, headers: HeaderMap): void {
  exchange.markExecuted()
  exchange.markUpstreamStatus(status)
  const advertised = retryAfterSeconds(status, headers)
  if (advertised !== null) exchange.noteRetryAfter(advertised)
}

/**
 * An upstream that received the request, then reset or closed the connection without answering (it
 * may have committed): a transparent proxy passes the break on, so the client is reset, as the
 * upstream itself would leave it, and the call is recorded executed with what the upstream did (#36).
 */
function passOnBreak(exchange: Exchange, error: unknown, io: ExchangeTransport): FlowEnding | null {
  const code = UPSTREAM_BREAKS.get(errorCode(error))
  if (code === undefined) return null
  exchange.markExecuted()
  io.reset()
  return exchange.ended({ outcome: 'reset', status: null, error: code })
}

/** An unreachable upstream: executed unless the request never left; the client gets a 502, sent once the exchange is finished. */
function unreachable(exchange: Exchange, error: unknown, io: ExchangeTransport): FlowEnding {
  const code = errorCode(error)
  if (!CONNECT_ERRORS.has(code)) exchange.markExecuted()
  const method = exchange.request.method
  const upstream = io.upstreamFailed?.(method, code) ?? exchange.record?.url
  const body = new TextEncoder().encode(
    JSON.stringify(errorBody('upstream_unreachable', 'ERR_UPSTREAM_UNREACHABLE', `Failed to reach the upstream for "${method} ${upstream}": ${code}.`)),
  )
  return { outcome: 'response', status: 502, error: 'UPSTREAM_UNREACHABLE', reply: { status: 502, headers: { 'content-type': 'application/json' }, body } }
}

/** How `drive` ended an exchange. `reply`: an unreachable upstream's 502, sent once the exchange is finished (recorded whether or not the client takes it). */
type FlowEnding = RelayEnding & { readonly reply?: { status: number; headers: Record<string, string>; body: Uint8Array }; readonly failed?: true }
const CANCELLED = { outcome: 'cancelled', status: null, error: 'CLIENT_ABORTED' } as const

/** Drive the exchange, then finish it, the one place the flow does, with how it ended. */
async function runFlow(exchange: Exchange, transport: ExchangeTransport, observer: ExchangeObserver | undefined): Promise<void> {
  observer?.onStart?.(exchange)
  const io = observer ? observed(exchange, transport, observer) : transport
  try {
    const ending = await drive(exchange, io, observer).catch((error: unknown): FlowEnding => (io.signal.aborted ? CANCELLED : { outcome: 'error', status: null, error: errorCode(error), failed: true }))
    // The client's ending is recorded as it happened (`exchange.ended`); the exchange closes once the upstream was read on.
    if (ending.reading) await ending.reading
    exchange.finish(ending.outcome, ending.status, ending.error)
    if (ending.failed) resetClient(io)
    else if (ending.reply) await io.respond(ending.reply).catch(() => io.signal.aborted || resetClient(io))
  } finally {
    transport.settle?.()
    observer?.onFinished?.(exchange)
  }
}

function resetClient(io: ExchangeTransport): void {
  try {
    io.reset()
  } catch {
    // The client is already gone.
  }
}

async function drive(exchange: Exchange, io: ExchangeTransport, observer: ExchangeObserver | undefined): Promise<FlowEnding> {
  if (exchange.refused) {
    const body = new TextEncoder().encode(
      JSON.stringify(errorBody('call_budget_exhausted', 'ERR_CALL_BUDGET', 'The call budget of this run is exhausted; the request was not forwarded.')),
    )
    await io.respond({ status: BUDGET_REFUSAL_STATUS, headers: { 'content-type': 'application/json', 'x-toolstorm-refused': 'call-budget' }, body })
    return exchange.ended({ outcome: 'response', status: BUDGET_REFUSAL_STATUS })
  }

  const fault = exchange.fault
  const rule = exchange.rule
  // A fault before the upstream may answer and leave the body unforwarded: read it before the
  // fault runs. Otherwise the reader sees the body as it is forwarded (no extra stage).
  const readBody = observer?.onRequestBodyRead ? (chunk: Uint8Array | null) => observer.onRequestBodyRead?.(exchange, chunk) : null
  const readEarly = readBody !== null && fault?.phase === 'before-upstream' && io.observeRequestBody !== undefined
  if (readEarly) io.observeRequestBody?.(readBody)

  const baseContext = (): Omit<FaultContext, 'response'> => ({
    rule: rule!,
    seed: exchange.seed,
    route: exchange.record!.route,
    key: exchange.rawKey,
    clock: exchange.clock,
    signal: io.signal,
    request: exchange.request,
    run: { identity: exchange.run, elapsed: exchange.elapsedSinceStart(), record: exchange.record, ...(exchange.quota ? { quota: exchange.quota } : {}) },
    protocol: exchange.protocol,
  })

  if (fault && rule && fault.phase === 'before-upstream') {
    const outcome = await fault.apply(baseContext())
    if (outcome.injected) exchange.markInjected(outcome.retryAfter)
    const ending = await carryOut(exchange, io, outcome.action)
    if (ending) return ending
    // The client may have left while the fault waited (latency): then nothing is forwarded.
    if (io.signal.aborted) return exchange.ended(CANCELLED)
  }

  const setHeaders: Record<string, string> = { [HEADER_CALL]: exchange.id }
  // A fault that rewrites the body asks for it uncompressed.
  if (fault?.needsBody) setHeaders['accept-encoding'] = 'identity'
  const forwarded = observer?.onRequestBody ? (chunk: Uint8Array | null) => observer.onRequestBody?.(exchange, chunk) : null
  const late = readEarly ? null : readBody
  const onRequestBody =
    forwarded && late
      ? (chunk: Uint8Array | null) => {
          forwarded(chunk)
          late(chunk)
        }
      : (forwarded ?? late)
  const options: ForwardOptions = onRequestBody ? { setHeaders, removeHeaders: CONTROL_HEADERS, onRequestBody } : { setHeaders, removeHeaders: CONTROL_HEADERS }

  let answer: UpstreamResponse | SourceAction
  try {
    answer = io.propagatesContext
      ? await exchangeContext.run({ exchangeId: exchange.id, stormId: exchange.stormId }, () => io.forward(options))
      : await io.forward(options)
  } catch (error) {
    if (io.signal.aborted || errorCode(error) === 'UND_ERR_ABORTED') throw error
    return passOnBreak(exchange, error, io) ?? unreachable(exchange, error, io)
  }
  // The source answered with an action instead of a response (a cassette's recorded reset).
  if ('action' in answer) return (await carryOut(exchange, io, answer.action))!
  let upstream = answer
  recordUpstreamHead(exchange, upstream.status, upstream.headers)
  if (observer) upstream = observeUpstream(exchange, upstream, observer)

  if (fault && rule && fault.phase !== 'before-upstream') {
    let buffered: { bytes: Uint8Array; decoded: boolean } | null = null
    const response: ResponseView = {
      status: upstream.status,
      headers: upstream.headers,
      readBody: async () => {
        buffered ??= await readBodyDecoded(upstream.body, upstream.headers)
        return buffered.bytes
      },
    }
    const outcome = await fault.apply({ ...baseContext(), response })
    if (outcome.injected) exchange.markInjected(outcome.retryAfter)
    if (outcome.action.type !== 'pass') return (await carryOut(exchange, io, outcome.action, upstream))!
    if (buffered !== null) {
      // The body was read to decide; relay what was read.
      const { bytes, decoded } = buffered as { bytes: Uint8Array; decoded: boolean }
      const headers = flattenHeaders(upstream.headers, decoded ? ['content-encoding', 'content-length', 'transfer-encoding'] : ['content-length', 'transfer-encoding'])
      await io.respond({ status: upstream.status, headers, body: bytes })
      return exchange.ended({ outcome: 'response', status: upstream.status })
    }
  }

  // The source decides how its body reaches the client (a cassette's recorded pace and ending).
  if (upstream.playback) return relayStream(exchange, io, upstream, upstream.playback)
  const end = watchStreamEnd(exchange, upstream.headers)
  try {
    await io.relay(end ? watchedBody(upstream, end) : upstream)
  } catch (error) {
    // A client that leaves once its stream's final event reached it got the whole answer.
    if (!(end?.reached && io.signal.aborted)) throw error
  }
  return exchange.ended({ outcome: 'response', status: upstream.status })
}

/** `upstream` with each body chunk shown to `end` as it is handed on to the client. */
function watchedBody(upstream: UpstreamResponse, end: StreamEnd): UpstreamResponse {
  if (upstream.tap) {
    upstream.tap((chunk) => chunk && end.push(chunk))
    return upstream
  }
  const source = upstream.body
  async function* watched(): AsyncGenerator<Uint8Array> {
    for await (const chunk of source) {
      end.push(chunk)
      yield chunk
    }
  }
  return { ...upstream, body: watched() }
}

/** Report the upstream's head and body chunks to the observer, whoever reads the body. */
function observeUpstream(exchange: Exchange, upstream: UpstreamResponse, observer: ExchangeObserver): UpstreamResponse {
  observer.onUpstreamHead?.(exchange, upstream.status, upstream.headers)
  if (!observer.onUpstreamBody) return upstream
  const listener = (chunk: Uint8Array | null, error?: Error) => observer.onUpstreamBody?.(exchange, chunk, error)
  if (upstream.tap) {
    upstream.tap(listener)
    return upstream
  }
  const source = upstream.body
  async function* tee(): AsyncGenerator<Uint8Array> {
    let ended = false
    try {
      for await (const chunk of source) {
        listener(chunk)
        yield chunk
      }
      ended = true
      listener(null)
    } catch (error) {
      ended = true
      listener(null, error as Error)
      throw error
    } finally {
      // A reader that stops early (a stream fault cut the body; the rest is never read) ends the
      // body for the observer too: a recorder waits for every body's end before it writes (#29).
      if (!ended) listener(null)
    }
  }
  return { status: upstream.status, headers: upstream.headers, body: tee(), ...(upstream.playback ? { playback: upstream.playback } : {}), ...(upstream.outliveClient ? { outliveClient: upstream.outliveClient } : {}) }
}

/** The transport, with what the client receives reported to the observer. */
function observed(exchange: Exchange, io: ExchangeTransport, observer: ExchangeObserver): ExchangeTransport {
  return {
    get signal() {
      return io.signal
    },
    ...(io.propagatesContext ? { propagatesContext: true } : {}),
    forward: (options) => io.forward(options),
    async respond(response) {
      observer.onClientHead?.(exchange, response.status, response.headers, false)
      if (response.body && response.body.length) observer.onClientBody?.(exchange, response.body)
      observer.onClientBody?.(exchange, null)
      await io.respond(response)
    },
    async relay(upstream) {
      observer.onClientHead?.(exchange, upstream.status, upstream.headers, true)
      await io.relay(upstream)
    },
    reset: () => io.reset(),
    ...(io.observeRequestBody ? { observeRequestBody: (onChunk: (chunk: Uint8Array | null) => void) => io.observeRequestBody!(onChunk) } : {}),
    ...(io.upstreamFailed ? { upstreamFailed: (method: string, code: string) => io.upstreamFailed!(method, code) } : {}),
    ...(io.open ? { open: (status: number, headers: HeaderMap) => observeWriter(exchange, observer, status, headers, io.open!(status, headers)) } : {}),
  }
}

/** Carry out an action; returns how the exchange ended (null: `pass`, it goes on). */
async function carryOut(exchange: Exchange, io: ExchangeTransport, action: FaultAction, upstream?: UpstreamResponse): Promise<FlowEnding | null> {
  switch (action.type) {
    case 'pass':
      return null
    case 'reset':
      io.reset()
      return exchange.ended({ outcome: 'reset', status: null, error: 'ECONNRESET' })
    case 'respond':
      await io.respond({ status: action.status, headers: action.headers, body: action.body })
      return exchange.ended({ outcome: 'response', status: action.status })
    case 'stream':
      return relayStream(exchange, io, upstream, action.transform)
  }
}

/** An upstream certificate that fails verification stops the request before a byte of it is sent. */
const TLS_VERIFY_ERRORS = ['UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'UNABLE_TO_GET_ISSUER_CERT_LOCALLY', 'DEPTH_ZERO_SELF_SIGNED_CERT', 'SELF_SIGNED_CERT_IN_CHAIN', 'CERT_HAS_EXPIRED', 'CERT_NOT_YET_VALID', 'CERT_UNTRUSTED', 'CERT_REVOKED', 'ERR_TLS_CERT_ALTNAME_INVALID']
/** How an upstream breaks off after the request (the pool's UPSTREAM_CLOSED, undici's UND_ERR_SOCKET: a close), as the report names it. */
const UPSTREAM_BREAKS = new Map([['ECONNRESET', 'UPSTREAM_RESET'], ['EPIPE', 'UPSTREAM_RESET'], ['UPSTREAM_CLOSED', 'UPSTREAM_CLOSED'], ['UND_ERR_SOCKET', 'UPSTREAM_CLOSED']])
const CONNECT_ERRORS = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_CONNECT_TIMEOUT', 'ECONNRESET_BEFORE_SEND', ...TLS_VERIFY_ERRORS])
