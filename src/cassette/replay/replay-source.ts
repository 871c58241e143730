/**
 * The cassette source: a cassette answers the exchanges of a proxy (docs/architecture.md), so
 * `toolstorm replay` is `startProxy({ source: replaySource(cassette) })` and every fault, run,
 * redaction and admin route works in replay as in the proxy. Recorded endings are the engine's
 * own actions: a reset before the head is a `reset` action, a body that broke off plays through a
 * stream transform that ends it the same way (cut, reset), a recorded wait holds the client until
 * it gives up (or the server closes), and a recorded stream is paced as it was (`speed`).
 *
 * Modes: `replay` (default) never reaches the network. `passthrough-unmatched` sends requests that
 * match nothing to the live source. `update` does too, and its `steps` say which positions were
 * replayed and which exchanges were live, in order, so the server can rewrite the cassette.
 *
 * @example
 * const proxy = await startProxy({ source: replaySource(await Cassette.load('incident.cassette.jsonl')) })
 */
import type { Readable } from 'node:stream'
import { errorBody, type ErrorBodyType } from '../../error-body.js'
import type { ErrorCode } from '../../errors.js'
import type { SourceAction, UpstreamExchange, UpstreamResponse } from '../../engine/exchange-transport.js'
import type { CassetteExchange, StoredServerMessage } from '../format/cassette-schema.js'
import type { StreamTransform } from '../../engine/streams/stream-transform.js'
import type { SourceRequest, UpstreamSource } from '../../engine/upstream-source.js'
import { withBody } from '../../with-body.js'
import { BodyCapture } from '../format/body-capture.js'
import type { Cassette } from '../format/cassette.js'
import type { SessionStep } from './merge-session.js'
import { replayedResponse } from './replay-response.js'
import { recordedRequestId, rpcIdRewrite } from './rpc-ids.js'
import { echoLocation, echoPlan, echoRewrite, storedBodyText } from './echoed-values.js'
import { headerOf } from '../format/store-headers.js'
import { answerIdOf, isLegacySessionStream, LegacyAnswerGates } from './legacy-answers.js'
import { clientAnswerIdOf, serverRequestIdOf, withheldAnswerEvent, type ClientAnswerOutcome } from './client-answer-gates.js'
import { AnswerWaiters } from '../../mcp/answer-waiters.js'
import type { JsonRpcId } from '../../mcp/mcp-request.js'
import type { JsonValue } from '../../json/canonical-json.js'
import { clientAnswerDifference } from './client-answers.js'
import { serverRequestMethod } from '../format/server-request.js'
import { describeExchange } from './replay-labels.js'
import type { ReplayOptions } from './replay-options.js'
import { ReplaySession, type ReplayTicket } from './replay-session.js'
import { formatMissDiff, type MissDiff } from './miss-diff.js'
import { REPLAY_REFUSAL_HEADERS, REPLAY_REFUSAL_STATUS } from './replay-refusal.js'
import { pacer, replayEnding, replayPlan, type ReplayEnding, type ReplayPlan } from './replay-stream.js'

export type ReplayMode = 'replay' | 'update' | 'passthrough-unmatched'

export interface ReplaySourceOptions extends Omit<ReplayOptions, 'passthroughUnmatched'> {
  mode?: ReplayMode
}

export interface ReplaySource extends UpstreamSource {
  readonly kind: 'cassette'
  readonly mode: ReplayMode
  readonly session: ReplaySession
  /** The session's traffic in order (`update` mode): replayed positions and live exchanges. */
  readonly steps: readonly SessionStep[]
  /** End the recorded waits still holding a client (they see a reset). */
  close(): Promise<void>
}

/** Request bodies buffered to forward them (passthrough modes) at most; larger ones are refused. */
const MAX_FORWARDED_BODY = 256 * 1024 * 1024

const NO_BYTES = Buffer.alloc(0)

/** A request whose front door can send a server's own messages (stdio: `toolstorm mcp --replay`). */
export interface ServerMessagesRequest extends SourceRequest {
  /**
   * The server's notifications and requests recorded with the exchange that answers this request.
   * `answered` is told the client's answer to the request at `index` (null: it never came, the
   * call ended first): null when it matches the recorded one, else the message the call is
   * answered with instead (the verdict failed).
   */
  replayServerMessages?(messages: readonly StoredServerMessage[], answered: (index: number, live: JsonValue | null) => string | null): void
}

/** Read a request body: a bounded capture for matching, and every byte when it may be forwarded. */
function readRequest(body: Readable | null, limit: number, keepAll: boolean): Promise<{ capture: BodyCapture; all: Buffer | null; tooLarge: boolean }> {
  return new Promise((resolve, reject) => {
    const capture = new BodyCapture(limit)
    const chunks: Buffer[] = []
    let tooLarge = false
    if (!body) {
      capture.ended = true
      return resolve({ capture, all: keepAll ? NO_BYTES : null, tooLarge })
    }
    body.on('data', (chunk: Buffer) => {
      capture.push(chunk)
      if (!keepAll || tooLarge) return
      if (capture.size > MAX_FORWARDED_BODY) {
        tooLarge = true
        chunks.length = 0
        return
      }
      chunks.push(chunk)
    })
    body.on('end', () => {
      capture.ended = true
      resolve({ capture, all: keepAll && !tooLarge ? Buffer.concat(chunks) : null, tooLarge })
    })
    body.on('error', reject)
  })
}

/** An error answer; a miss also carries its diff (`error.diff`, and as lines in `error.details`). */
function problem(status: number, type: ErrorBodyType, code: ErrorCode, message: string, diff: MissDiff | null = null, headers: Readonly<Record<string, string>> = { 'content-type': 'application/json' }): SourceAction {
  const answer = errorBody(type, code, message, diff ? formatMissDiff(diff) : undefined)
  const body = new TextEncoder().encode(JSON.stringify(diff ? { error: { ...answer.error, diff } } : answer))
  return { action: { type: 'respond', status, headers: { ...headers }, body } }
}

const RESET: SourceAction = { action: { type: 'reset' } }

async function* once(bytes: Buffer): AsyncGenerator<Uint8Array> {
  if (bytes.length) yield bytes
}

function untilAborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => (signal.aborted ? resolve() : signal.addEventListener('abort', () => resolve(), { once: true })))
}

/**
 * The recorded pieces at their recorded times; a recorded wait never ends (until `signal` aborts: it
 * then throws). `left(sent)`: `signal` aborted while the client waited for more than it had been
 * sent (a recorded wait for nothing apart).
 */
async function* paced(plan: ReplayPlan, signal: AbortSignal, left: (sent: number) => void): AsyncGenerator<Uint8Array> {
  const due = pacer()
  let sent = 0
  let played = false
  try {
    for (const piece of plan.pieces) {
      await due(piece.at, signal)
      if (signal.aborted) throw signal.reason
      yield piece.bytes
      sent++
    }
    if (plan.ending === 'hold') {
      played = true
      await untilAborted(signal)
      throw signal.reason
    }
    // A stall that ended in a cut, or the gap before a dropped final event, lasts as long as it did.
    await due(plan.end, signal)
    if (signal.aborted) throw signal.reason
    played = true
  } finally {
    // Left while waiting for a piece, or while one was being written: in-process the body is
    // pulled at the client's pace, so even an instant replay sees a client that stops reading
    // (the relay then returns this generator at a yield). A fault's cut also returns it, with the
    // client still there: that is not leaving. Nor is closing once every piece arrived, while the
    // replay waits out the recorded end (a client that closes on its last event).
    if (!played && signal.aborted && sent < plan.pieces.length) left(sent)
  }
}

/**
 * Request `request`'s answer, which its client read to the recorded end when recorded, ended after
 * `sent` of its pieces (the client left, or the replay stopped first): the verdict fails unless
 * `allowUnused`, as for an exchange never requested.
 */
function clientLeft(session: ReplaySession, request: number, exchange: CassetteExchange, sent: number, pieces: number): void {
  const had = `${sent} of ${pieces} ${exchange.response?.stream ? 'events' : 'parts'}`
  const message = `Failed to replay ${session.cassette.source} faithfully: request ${request} (${describeExchange(exchange)}): its answer ended after ${had} (the client left, or the replay stopped first), though the client read it to its recorded end when recorded. Pass --allow-unused if that is expected.`
  session.noteUnanswered(request, `answer left after ${had}`, message)
}

/** A legacy session's GET stream: its other events at once, then each answer once its POST is replayed, until the client leaves. */
async function* legacySessionStream(pieces: ReplayPlan['pieces'], gates: LegacyAnswerGates, signal: AbortSignal): AsyncGenerator<Uint8Array> {
  const answers: Array<{ id: JsonRpcId; bytes: Uint8Array }> = []
  const others: Uint8Array[] = []
  for (const piece of pieces) {
    const id = answerIdOf(piece.bytes)
    if (id === null) others.push(piece.bytes)
    else answers.push({ id, bytes: piece.bytes })
  }
  const stream = gates.open(answers)
  for (const bytes of others) yield bytes
  yield* stream.play(signal)
}

/** Relays the pieces unchanged, then ends the body as it ended when recorded. `keepsLength`: the recorded content-length stays in the head. */
function recordedEnding(ending: ReplayEnding, keepsLength: boolean): StreamTransform {
  return {
    changed: false,
    truncated: false,
    events: null,
    keepsLength,
    push: (chunk) => ({ send: [{ bytes: chunk }], next: 'continue' }),
    finish: () => ({ send: [], next: ending === 'cut' ? 'abort' : ending === 'reset' ? 'reset' : 'end' }),
  }
}

/** The request being served, as replay read it: its number in the verdict's table, and its body. */
interface ServedRequest {
  readonly number: number
  readonly body: BodyCapture
}

/** A recorded answer as text for the echo test: its `Location` and its body (none when binary). */
function answerText(exchange: CassetteExchange): string {
  const location = exchange.response?.headers.location
  return `${typeof location === 'string' ? location : ''}\n${storedBodyText(exchange.response?.body ?? null) ?? ''}`
}

/**
 * How the recorded answer is rewritten for the live request (a piece at a time): the live JSON-RPC
 * id (rpc-ids.ts) and the values it echoes (echoed-values.ts); echoes it could not restore are
 * told to the session, so the verdict says so. Null when nothing is rewritten.
 */
function answerRewrite(exchange: CassetteExchange, request: SourceRequest, session: ReplaySession, live: ServedRequest): { body: ((bytes: Buffer) => Buffer) | null; location: ((location: string) => string) | null; done: () => void } {
  const mcp = request.exchange.request.mcp
  const ids = rpcIdRewrite(mcp ? recordedRequestId(exchange.request.body) : null, mcp?.id)
  const encoded = headerOf(request.headers, 'content-encoding') !== undefined
  const plan = echoPlan(
    { url: exchange.request.url, contentType: headerOf(exchange.request.headers, 'content-type'), body: storedBodyText(exchange.request.body) },
    { url: request.rawUrl, contentType: headerOf(request.headers, 'content-type'), complete: live.body.complete && !encoded, body: () => (encoded ? null : live.body.bytes().toString('utf8')) },
    session.matchOptions,
    answerText(exchange),
  )
  const unrestored = new Set<string>()
  const note = (name: string) => void unrestored.add(name)
  const echoes = plan && echoRewrite(plan, note)
  return {
    body: ids && echoes ? (bytes) => echoes(ids(bytes)) : (ids ?? echoes),
    location: plan && ((location) => echoLocation(location, plan, note)),
    done: () => {
      if (unrestored.size) session.noteUnrestoredEchoes(live.number, [...unrestored])
    },
  }
}

/**
 * `events` (a replayed MCP call's stream) held after each server request until the client's
 * answer POST was replayed; when the cassette refused that answer, the rest gives way to an error
 * for the live call `id` (client-answer-gates.ts).
 */
async function* gatedOnClientAnswers(events: AsyncGenerator<Uint8Array>, gates: AnswerWaiters<ClientAnswerOutcome>, id: JsonRpcId, signal: AbortSignal): AsyncGenerator<Uint8Array> {
  for await (const event of events) {
    const asks = serverRequestIdOf(event)
    // Registered before the request is sent: the answer cannot come first.
    const answered = asks === null ? null : gates.expect(asks, signal)
    yield event
    const refusal = answered && (await answered)
    if (refusal) {
      yield withheldAnswerEvent(id, refusal)
      return
    }
  }
}

/** What answers a request the cassette serves: its recorded response, or the action that stands for how it ended. */
async function served(exchange: CassetteExchange, request: SourceRequest, session: ReplaySession, closed: AbortSignal, gates: { legacy: LegacyAnswerGates; client: AnswerWaiters<ClientAnswerOutcome> }, live: ServedRequest): Promise<UpstreamResponse | SourceAction> {
  const response = exchange.response
  const method = request.method
  const mcp = request.exchange.request.mcp
  const recordedId = mcp ? recordedRequestId(exchange.request.body) : null
  // A legacy MCP message: its answer, recorded on the session's GET stream, may play now, with the live id.
  if (mcp?.legacySse && mcp.id !== null && recordedId !== null) gates.legacy.release(recordedId, mcp.id)
  if (exchange.outcome === 'reset') return RESET
  if (response === null) {
    if (replayEnding(exchange) !== 'hold') return RESET
    // No head: the client waited in vain when this was recorded. It waits again, until it gives
    // up or the server closes (then it sees the connection reset).
    await untilAborted(AbortSignal.any([request.signal, closed]))
    if (request.signal.aborted) throw request.signal.reason
    return RESET
  }
  // An MCP answer carries the live request's JSON-RPC id, not the recorded one, and every answer the values the live request sent that it echoes.
  const rewrites = answerRewrite(exchange, request, session, live)
  const rewrite = rewrites.body
  const ending = replayEnding(exchange)
  if (ending === 'end' && !(response.stream && method !== 'HEAD')) {
    const replayed = withEchoedLocation(replayedResponse(response, { complete: true, method }), rewrites.location)
    let body = method === 'HEAD' || replayed.body.length === 0 ? NO_BYTES : replayed.body
    if (rewrite && body.length) {
      body = rewrite(body)
      replayed.headers['content-length'] = String(body.length)
    }
    rewrites.done()
    return { status: replayed.status, headers: replayed.headers, body: once(body) }
  }
  // The head, the bytes the client had (event by event for a stream), then what happened next.
  const replayed = withEchoedLocation(replayedResponse(response, { complete: false, method }), rewrites.location)
  const plan = replayPlan(exchange, response, method === 'HEAD' ? NO_BYTES : replayed.body, session.speed)
  const pieces = rewrite ? plan.pieces.map((piece) => ({ at: piece.at, bytes: rewrite(piece.bytes) })) : plan.pieces
  rewrites.done()
  const signal = AbortSignal.any([request.signal, closed])
  // A legacy MCP session's stream: its answers wait for the POSTs that asked (legacy-answers.ts).
  if (method === 'GET' && isLegacySessionStream(replayed.body)) return { status: replayed.status, headers: replayed.headers, body: legacySessionStream(pieces, gates.legacy, signal) }
  // An answer the recorded client read to its end and the live one did not is a divergence.
  const events = paced({ ...plan, pieces }, signal, (sent) => clientLeft(session, live.number, exchange, sent, pieces.length))
  // A call's stream may ask the client (sampling, elicitation): it waits for the answer's POST.
  const body = mcp && mcp.id !== null && method === 'POST' ? gatedOnClientAnswers(events, gates.client, mcp.id, signal) : events
  return { status: replayed.status, headers: replayed.headers, body, playback: recordedEnding(plan.ending, keepsRecordedLength(replayed, plan, rewrite !== null)) }
}

/** `replayed` with its redirect's echoed query values given the live ones. */
function withEchoedLocation<T extends { headers: Record<string, string | string[]> }>(replayed: T, location: ((location: string) => string) | null): T {
  const recorded = replayed.headers.location
  if (location && typeof recorded === 'string') replayed.headers.location = location(recorded)
  return replayed
}

/**
 * Whether a body that breaks off keeps its recorded `content-length` (a truncated body: the length
 * the upstream announced, the stored prefix, then the break). Only when the bytes sent stay below
 * it: redaction or a rewritten JSON-RPC id may have changed them.
 */
function keepsRecordedLength(replayed: { headers: Record<string, string | string[]> }, plan: ReplayPlan, rewritten: boolean): boolean {
  if (rewritten || (plan.ending !== 'cut' && plan.ending !== 'reset')) return false
  const length = replayed.headers['content-length']
  if (typeof length !== 'string' || !/^\d+$/.test(length)) return false
  let sent = 0
  for (const piece of plan.pieces) sent += piece.bytes.length
  return sent < Number(length)
}

/** The client's answer to a replayed server request (client-answers.ts): null when it matches, else the verdict fails and this says why. */
function clientAnswered(session: ReplaySession, request: number, exchange: CassetteExchange, asked: StoredServerMessage, live: JsonValue | null): string | null {
  const method = serverRequestMethod(asked) ?? 'request'
  if (live === null) {
    const message = `Failed to replay ${session.cassette.source} faithfully: request ${request} (${describeExchange(exchange)}): the client never answered the server's ${method}, though it did when recorded (the call was cancelled, or the client left). Pass --allow-unused if that is expected.`
    session.noteUnanswered(request, `the client never answered ${method}`, message)
    return message
  }
  const diff = clientAnswerDifference(asked, live, session.redactor, session.matchOptions)
  if (diff === null) return null
  const paths = diff.map(({ path, expected, seen }) => `${path}: ${expected} ≠ ${seen}`).join('; ')
  const message = `Failed to replay ${session.cassette.source} faithfully: request ${request} (${describeExchange(exchange)}): the client answered the server's ${method} otherwise than when recorded (${paths}), so the recorded answer, made from the recorded one, was withheld. Record again, or pass --ignore-body-field for a field that varies.`
  session.failServed(request, `the client's answer to ${method} differs`, message)
  return message
}

class CassetteExchangeHalf implements UpstreamExchange {
  readonly #source: CassetteSource
  readonly #request: SourceRequest
  readonly #live: UpstreamSource
  /** Null when the request's route is live: it goes to the network and takes no position. */
  readonly #ticket: ReplayTicket | null
  #asked = false
  #passed: UpstreamExchange | null = null

  constructor(source: CassetteSource, request: SourceRequest, live: UpstreamSource) {
    this.#source = source
    this.#request = request
    this.#live = live
    // The position is claimed when the head arrives: concurrent requests keep their order.
    this.#ticket = source.session.isLive(request.exchange.record?.route, request.method, request.rawUrl) ? null : source.session.begin()
  }

  async forward(options: Parameters<UpstreamExchange['forward']>[0]): Promise<UpstreamResponse | SourceAction> {
    this.#asked = true
    const source = this.#source
    const session = source.session
    const request = this.#request
    if (this.#ticket === null) {
      // A live route: the network answers, under the same rules, effects and contracts as the proxy.
      session.noteLive(`${request.method} ${session.redactor.url(request.rawUrl)}`)
      if (source.mode === 'update') source.steps.push({ type: 'recorded', run: request.exchange.run.id, call: request.exchange.record?.id ?? null })
      this.#passed = this.#live.begin(request, this.#live)
      return this.#passed.forward(options)
    }
    const ticket = this.#ticket
    const forwarding = source.mode !== 'replay'
    // Observers see the request body as it is read here, forwarded or not.
    const { capture, all, tooLarge } = await readRequest(request.takeBody(options.onRequestBody), session.cassette.header.bodyLimit, forwarding)
    const route = request.exchange.record?.route
    const decision = await session.decide(ticket, { method: request.method, url: request.rawUrl, headers: request.headers, body: capture, ...(route === undefined ? {} : { route }) })
    if (decision.type === 'serve') {
      if (source.mode === 'update') source.steps.push({ type: 'replayed', position: decision.position })
      // A stdio front door sends the server's recorded messages before the answer, and the client's answers come back here.
      const { exchange: recorded } = decision
      const messages = recorded.notifications
      if (messages?.length) (request as ServerMessagesRequest).replayServerMessages?.(messages, (index, live) => clientAnswered(session, ticket.request, recorded, messages[index] as StoredServerMessage, live))
      source.clientAnswered(request, capture, null)
      return served(decision.exchange, request, session, source.closed, { legacy: source.answers, client: source.clientAnswers }, { number: ticket.request, body: capture })
    }
    source.clientAnswered(request, capture, decision.type === 'refuse' ? decision.error.message : null)
    if (decision.type === 'refuse') return problem(REPLAY_REFUSAL_STATUS, 'cassette_mismatch', decision.error.code, decision.error.message, decision.diff, REPLAY_REFUSAL_HEADERS)
    if (tooLarge) return problem(413, 'replay_error', 'ERR_INPUT_TOO_LARGE', `Failed to forward "${request.method} ${session.redactor.url(request.rawUrl)}": its body exceeds ${MAX_FORWARDED_BODY} bytes.`)
    // Passthrough: the live source sends the bytes read above.
    const exchange = request.exchange
    if (source.mode === 'update') source.steps.push({ type: 'recorded', run: exchange.run.id, call: exchange.record?.id ?? null })
    this.#passed = this.#live.begin(withBody(request, all), this.#live)
    const { onRequestBody: _observed, ...rest } = options
    return this.#passed.forward(rest)
  }

  upstreamFailed(method: string, code: string): string {
    return this.#passed?.upstreamFailed?.(method, code) ?? this.#request.rawUrl
  }

  settle(): void {
    // A fault (or the call budget) answered before the cassette was asked: the position is free again.
    if (!this.#asked && this.#ticket !== null) this.#source.session.release(this.#ticket)
  }
}

class CassetteSource implements ReplaySource {
  readonly kind = 'cassette' as const
  readonly routesItself = true
  readonly mode: ReplayMode
  readonly session: ReplaySession
  readonly steps: SessionStep[] = []
  readonly connectPorts: readonly number[]
  /** Legacy MCP sessions' answers, released as their POSTs are replayed. */
  readonly answers = new LegacyAnswerGates()
  /** Replayed MCP streams waiting for the client's answer to a server request. */
  readonly clientAnswers = new AnswerWaiters<ClientAnswerOutcome>()
  readonly #closed = new AbortController()

  constructor(cassette: Cassette, options: ReplaySourceOptions) {
    this.mode = options.mode ?? 'replay'
    const forwarding = this.mode !== 'replay'
    this.session = new ReplaySession(cassette, { ...options, passthroughUnmatched: forwarding, ...(this.mode === 'update' ? { allowUnused: true } : {}) })
    this.connectPorts = recordedPorts(cassette)
  }

  get closed(): AbortSignal {
    return this.#closed.signal
  }

  begin(request: SourceRequest, live: UpstreamSource): UpstreamExchange {
    return new CassetteExchangeHalf(this, request, live)
  }

  /** A POST was decided: when it carries the client's answer a replayed stream waits for, that stream goes on (`refusal`: the cassette refused it). */
  clientAnswered(request: SourceRequest, body: BodyCapture, refusal: string | null): void {
    if (!this.clientAnswers.pending || request.method !== 'POST' || !body.complete) return
    const id = clientAnswerIdOf(body.bytes())
    if (id !== null) this.clientAnswers.arrived(id, refusal)
  }

  async close(): Promise<void> {
    this.#closed.abort(new Error('The replay server closed.'))
  }
}

/** The ports of the origins recorded in the cassette (CONNECT may reach them). */
function recordedPorts(cassette: Cassette): number[] {
  const ports = new Set<number>()
  for (const exchange of cassette.exchanges) {
    const origin = /^https?:\/\/[^/?#]*/i.exec(exchange.request.url)?.[0]
    if (!origin) continue
    try {
      const url = new URL(origin)
      ports.add(url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80)
    } catch {
      // Not a URL a client could send again.
    }
  }
  return [...ports]
}

/** A source that answers from `cassette` (see the file's comment for the modes). */
export function replaySource(cassette: Cassette, options: ReplaySourceOptions = {}): ReplaySource {
  return new CassetteSource(cassette, options)
}
