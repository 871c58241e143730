/**
 * The recorder's observer half: it captures each exchange's bytes as they pass (request, the
 * upstream's answer, what the client got, event-stream timings, effects reported for it) and
 * turns a finished exchange into a redacted cassette line, handed on in the order the requests
 * arrived. Where the lines go (the cassette file, Redis, memory) is the writer's business (cassette-writer.ts).
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel'
import { roundSeconds } from '../../engine/clock.js'
import type { EffectEvent } from '../../engine/evidence/channels.js'
import type { Exchange } from '../../engine/exchange.js'
import type { ExchangeObserver, ObserverFront } from '../../engine/exchange-flow.js'
import type { HeaderMap } from '../../engine/http.js'
import type { CassetteExchange, StoredClientResponse, StoredEffect, StoredServerMessage } from '../format/cassette-schema.js'
import type { JsonValue } from '../../json/canonical-json.js'
import { SERVER_MESSAGE_CHANNEL, type ServerMessageEvent } from '../../stdio/server-messages.js'
import { serverRequestMethod } from '../format/server-request.js'
import type { Storm } from '../../engine/storm.js'
import { BodyCapture, REDACTION_MARGIN } from '../format/body-capture.js'
import { storeBody } from '../format/store-body.js'
import { headerOf, storeHeaders } from '../format/store-headers.js'
import { storeEventStream } from '../format/store-stream.js'
import { isEventStreamHead, StreamTimeline } from '../format/stream-timeline.js'

export interface ExchangeCaptureOptions {
  readonly bodyLimit: number
  /** Header names never stored (lower case). */
  readonly exclude: ReadonlySet<string>
  /** When not null, the only header names stored (lower case). */
  readonly only: ReadonlySet<string> | null
  /** How request URLs are stored; asked per line (the front door may say so after construction). */
  readonly urlForm: () => 'origin' | 'absolute'
  /** The front door the observer was given to said where it sits. */
  readonly attached: (front: ObserverFront) => void
  /** Keep one finished exchange's line; called in arrival order, one at a time. */
  readonly write: (exchange: CassetteExchange, run: string) => Promise<void>
  /** Effects reported after the line of the exchange at `seq` was written (called after it). */
  readonly lateEffects: (seq: number, effects: StoredEffect[]) => Promise<void>
}

interface Head {
  status: number
  headers: HeaderMap
  /** For an event stream: when each of its blocks arrived. */
  timeline?: StreamTimeline | null
}

interface Entry {
  readonly seq: number
  readonly exchange: Exchange
  readonly startedAt: number
  readonly request: BodyCapture
  requestRead: boolean
  upstream: (Head & { body: BodyCapture }) | null
  client: (Head & { same: boolean; body: BodyCapture | null }) | null
  readonly effects: StoredEffect[]
  /** A stdio server's notifications that came with it. */
  readonly notifications: StoredServerMessage[]
  finishedAt: number | null
  /** Things to wait for before the line is written: the exchange's end, and each body it started. */
  waiting: number
  /** Its run was forgotten (`forget`) before its line was written: it is not written. */
  forgotten: boolean
  done: () => void
  readonly finished: Promise<void>
}

/** One awaited thing is over; the line can be written when none is left. */
function settle(entry: Entry): void {
  if (--entry.waiting === 0) entry.done()
}

/** One chunk of a side's body (null: its end), into its capture and its event timeline. */
function captureChunk(entry: Entry, side: (Head & { body: BodyCapture | null }) | null, chunk: Uint8Array | null): void {
  const body = side?.body
  if (!side || !body || body.ended) return
  if (chunk) {
    side.timeline?.push(chunk)
    body.push(chunk)
    return
  }
  side.timeline?.finish()
  body.ended = true
  settle(entry)
}

const BODILESS_METHODS = new Set(['GET', 'HEAD', 'OPTIONS', 'TRACE', 'DELETE', 'CONNECT'])

/** Exchanges remembered after they were written, for effects reported late. */
const LATE_EFFECT_WINDOW = 4096

export class ExchangeCapture {
  readonly storm: Storm
  readonly observer: ExchangeObserver
  readonly #options: ExchangeCaptureOptions
  readonly #bodyLimit: number
  readonly #exclude: ReadonlySet<string>
  readonly #only: ReadonlySet<string> | null
  readonly #active = new Map<string, Entry>()
  readonly #written = new Map<string, number>()
  #seq = 0
  #chain: Promise<void> = Promise.resolve()
  #failure: unknown = null
  #accepting = true
  readonly #onEffect: (message: unknown) => void
  readonly #onServerMessage: (message: unknown) => void

  constructor(storm: Storm, options: ExchangeCaptureOptions) {
    this.storm = storm
    this.#options = options
    this.#bodyLimit = options.bodyLimit
    this.#exclude = options.exclude
    this.#only = options.only
    this.#onEffect = (message) => this.#effect(message as EffectEvent)
    subscribe('toolstorm:commit:reported', this.#onEffect)
    this.#onServerMessage = (message) => this.#serverMessage(message as ServerMessageEvent)
    subscribe(SERVER_MESSAGE_CHANNEL, this.#onServerMessage)
    this.observer = this.#createObserver()
  }

  /** Exchanges started so far. */
  get size(): number {
    return this.#seq
  }

  /** The first failure to make or keep a line (rethrown by the recorder's close). */
  get failure(): unknown {
    return this.#failure
  }

  /** Every line of the exchanges started so far has been handed on. */
  settled(): Promise<void> {
    return this.#chain
  }

  /** The exchanges of `run` started so far and not yet written are not written (its run was forgotten). */
  forget(run: string): void {
    for (const entry of this.#active.values()) if (entry.exchange.run.id === run) entry.forgotten = true
  }

  /** Take no new exchange (those running still finish). */
  stop(): void {
    this.#accepting = false
  }

  /** Stop listening for effects. */
  dispose(): void {
    this.#accepting = false
    unsubscribe('toolstorm:commit:reported', this.#onEffect)
    unsubscribe(SERVER_MESSAGE_CHANNEL, this.#onServerMessage)
  }

  #createObserver(): ExchangeObserver {
    const entries = new WeakMap<Exchange, Entry>()
    return {
      attached: (front) => this.#options.attached(front),
      onStart: (exchange) => {
        if (!this.#accepting) return
        let done!: () => void
        const finished = new Promise<void>((resolve) => (done = resolve))
        const entry: Entry = {
          seq: ++this.#seq,
          exchange,
          startedAt: roundSeconds(exchange.elapsedSinceStart()),
          request: new BodyCapture(this.#bodyLimit),
          requestRead: false,
          upstream: null,
          client: null,
          effects: [],
          notifications: [],
          finishedAt: null,
          waiting: 1,
          forgotten: false,
          done,
          finished,
        }
        entries.set(exchange, entry)
        this.#active.set(exchange.id, entry)
        // Lines are written in arrival order, each once its exchange finished.
        this.#chain = this.#chain.then(async () => {
          await entry.finished
          const line = await this.#line(entry)
          // After a line failed (a full disk), no later one is written: the file stays the valid
          // cassette of the exchanges before it, never one with a hole no reader accepts.
          if (!entry.forgotten && this.#failure === null) await this.#options.write(line, exchange.run.id)
          this.#active.delete(exchange.id)
          this.#written.set(exchange.id, entry.seq)
          if (this.#written.size > LATE_EFFECT_WINDOW) this.#written.delete(this.#written.keys().next().value as string)
        }).catch((error: unknown) => {
          this.#failure ??= error
        })
      },
      onRequestBody: (exchange, chunk) => {
        const entry = entries.get(exchange)
        if (!entry) return
        entry.requestRead = true
        if (chunk) entry.request.push(chunk)
        else entry.request.ended = true
      },
      // In-process, an exchange can finish before the client has read the body it was handed:
      // the line waits for every body to end.
      // An event stream also gets a timeline: when each block reached the client. A relayed
      // stream's upstream chunks are the client's, so its timeline starts with the upstream head.
      onUpstreamHead: (exchange, status, headers) => {
        const entry = entries.get(exchange)
        if (!entry) return
        const timeline = this.#timelineFor(exchange, status, headers)
        entry.upstream = { status, headers, body: new BodyCapture(this.#bodyLimit), timeline }
        entry.waiting++
      },
      onUpstreamBody: (exchange, chunk) => {
        const entry = entries.get(exchange)
        if (entry) captureChunk(entry, entry.upstream, chunk)
      },
      onClientHead: (exchange, status, headers, same) => {
        const entry = entries.get(exchange)
        if (!entry) return
        const timeline = same ? (entry.upstream?.timeline ?? null) : this.#timelineFor(exchange, status, headers)
        entry.client = { status, headers, same, body: same ? null : new BodyCapture(this.#bodyLimit), timeline }
        if (!same) entry.waiting++
      },
      onClientBody: (exchange, chunk) => {
        const entry = entries.get(exchange)
        if (entry) captureChunk(entry, entry.client, chunk)
      },
      onFinished: (exchange) => {
        const entry = entries.get(exchange)
        if (!entry || entry.finishedAt !== null) return
        entry.finishedAt = roundSeconds(exchange.elapsedSinceStart())
        settle(entry)
      },
    }
  }

  #timelineFor(exchange: Exchange, status: number, headers: HeaderMap): StreamTimeline | null {
    return isEventStreamHead(exchange.request.method, status, headers) ? new StreamTimeline(exchange.clock, this.#bodyLimit + REDACTION_MARGIN) : null
  }

  #effect(event: EffectEvent): void {
    const { name, key, at, identity, redacted } = event.effect
    const stored = { name, key, at, identity, redacted }
    const entry = this.#active.get(event.exchangeId)
    if (entry) {
      entry.effects.push(stored)
      return
    }
    const seq = this.#written.get(event.exchangeId)
    if (seq === undefined) return
    // After the lines before it, in the order reported.
    this.#chain = this.#chain.then(() => this.#options.lateEffects(seq, [stored])).catch((error: unknown) => {
      this.#failure ??= error
    })
  }

  /**
   * A stdio server's notification or request, kept redacted on the call it came with (while its
   * line is not written yet); the client's answer to a request, on that request.
   */
  #serverMessage(event: ServerMessageEvent): void {
    const entry = this.#active.get(event.exchangeId)
    if (!entry) return
    let message: JsonValue
    try {
      message = JSON.parse(event.line.toString('utf8')) as JsonValue
    } catch {
      return
    }
    const at = Math.max(0, roundSeconds(entry.exchange.elapsedSinceStart() - entry.startedAt))
    if (event.answers !== undefined) {
      const asked = entry.notifications.findLast((stored) => stored.answer === undefined && (stored.message as { id?: unknown } | null)?.id === event.answers && serverRequestMethod(stored) !== null)
      if (asked) asked.answer = { at, message: this.storm.redactor.json(message) }
      return
    }
    entry.notifications.push({ when: event.when, at, message: this.storm.redactor.json(message), ...(event.progress ? { progress: true as const } : {}) })
  }

  /** A stored response; with `timeline` (what the client received of an event stream), its events too. */
  async #response(head: Head, body: BodyCapture | null, timeline: StreamTimeline | null = null): Promise<StoredClientResponse> {
    const { redactor } = this.storm
    const headers = storeHeaders(head.headers, redactor, this.#exclude, this.#only)
    const events = timeline && body ? storeEventStream(body, timeline, { limit: this.#bodyLimit, redactor }) : null
    if (events) return { status: head.status, headers, body: events.body, stream: events.stream }
    return {
      status: head.status,
      headers,
      body: body ? await storeBody(body, { contentType: headerOf(head.headers, 'content-type'), contentEncoding: headerOf(head.headers, 'content-encoding'), limit: this.#bodyLimit, redactor }) : null,
    }
  }

  async #line(entry: Entry): Promise<CassetteExchange> {
    const { exchange } = entry
    const { redactor } = this.storm
    const record = exchange.record
    const requestHeaders = exchange.request.headers
    const url = this.#options.urlForm() === 'origin' ? redactor.url(exchange.url.pathname + exchange.url.search) : record?.url ?? redactor.url(exchange.url.href)
    // A request answered before it was forwarded had its body left unread: unknown, unless the
    // head says there is none. In-process requests carry no framing headers, so a method that
    // usually has a body counts as having one.
    const length = headerOf(requestHeaders, 'content-length')
    const declaresBody = headerOf(requestHeaders, 'transfer-encoding') !== undefined || (length !== undefined ? length !== '0' : !BODILESS_METHODS.has(exchange.request.method))
    const bodyUnknown = !entry.requestRead && declaresBody
    const requestBody = bodyUnknown
      ? null
      : await storeBody(entry.request, { contentType: headerOf(requestHeaders, 'content-type'), contentEncoding: headerOf(requestHeaders, 'content-encoding'), limit: this.#bodyLimit, redactor })
    const outcome = record ? (record.outcome === 'running' ? 'cancelled' : record.outcome) : entry.client ? 'response' : 'cancelled'
    const client = entry.client
    const upstream = entry.upstream
    const response = client && outcome !== 'reset' ? await this.#response(client, client.same ? (upstream?.body ?? null) : client.body, client.timeline ?? null) : null
    const upstreamAnswer = upstream && !(client?.same && outcome !== 'reset') ? await this.#response(upstream, upstream.body) : null
    const ended = entry.finishedAt ?? roundSeconds(exchange.elapsedSinceStart())
    return {
      seq: entry.seq,
      run: exchange.run.id,
      call: record?.id ?? null,
      route: record?.route ?? this.storm.decider.routeOf(exchange.request.method, exchange.url, exchange.request.route),
      ordinal: record?.ordinal ?? null,
      key: record?.key ?? null,
      parent: record?.parent ?? null,
      started: record?.started ?? entry.startedAt,
      elapsed: record?.elapsed ?? Math.max(0, roundSeconds(ended - entry.startedAt)),
      request: {
        method: exchange.request.method,
        url,
        headers: storeHeaders(requestHeaders, redactor, this.#exclude, this.#only),
        body: requestBody,
        ...(bodyUnknown ? { bodyUnknown: true as const } : {}),
      },
      outcome,
      response,
      upstream: upstreamAnswer,
      executed: record?.executed ?? false,
      fault: record?.fault && record.kind && record.phase ? { rule: record.fault, kind: record.kind, phase: record.phase, injected: record.injected } : null,
      retryAfter: record?.retryAfter ?? null,
      error: record?.error ?? null,
      effects: entry.effects,
      // Metadata only (prompts and outputs stay in the redacted bodies above).
      ...(record?.model ? { model: { ...record.model } } : {}),
      ...(record?.mcp ? { mcp: { ...record.mcp } } : {}),
      ...(record?.cut ? { cut: { ...record.cut } } : {}),
      ...(record?.trace ? { trace: { ...record.trace } } : {}),
      ...(entry.notifications.length ? { notifications: entry.notifications } : {}),
    }
  }

  /** Wait for running exchanges (at most `graceMs`), then store the stragglers as they are. */
  async drain(graceMs: number): Promise<void> {
    const chain = this.#chain
    let timer: NodeJS.Timeout | undefined
    await Promise.race([chain, new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs)))])
    clearTimeout(timer)
    for (const entry of this.#active.values()) entry.done()
    await this.#chain
  }
}
