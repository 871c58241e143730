/**
 * Record exchanges into a cassette: an `ExchangeObserver` for the proxy (`startProxy({ observer })`)
 * or in-process interception (`intercept(storm, { observer })`).
 *
 * Each exchange is stored in the order its request arrived, once it has finished, with the
 * redacted request, what the client received (or the fault), the upstream's own answer when the
 * client did not get it unchanged, timings and the effects the tool side reported for it.
 *
 * With a `file`, lines go to an append-only journal and the cassette is replaced atomically by a
 * complete snapshot about once a second (less often as it grows) and on `close()`, so a
 * `kill -9` leaves the previous complete cassette or a newer complete one, never a torn file.
 *
 * @example
 * const recorder = createCassetteRecorder(storm)
 * using _ = intercept(storm, { observer: recorder.observer })
 * await agent.run()
 * await recorder.save('incident.cassette.jsonl')
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel'
import { existsSync } from 'node:fs'
import { ConfigError, StateError, ToolstormError } from '../errors.js'
import { roundSeconds } from '../engine/clock.js'
import type { EffectEvent } from '../engine/evidence/channels.js'
import type { Exchange } from '../engine/exchange.js'
import type { ExchangeObserver, ObserverFront } from '../engine/exchange-flow.js'
import type { HeaderMap } from '../engine/http.js'
import {
  DEFAULT_BODY_LIMIT,
  MAX_BODY_LIMIT,
  type CassetteExchange,
  type CassetteFileExchange,
  type CassetteHeader,
  type MatchOptions,
  type StoredClientResponse,
  type StoredEffect,
} from '../engine/schema/cassette.js'
import type { Storm } from '../engine/storm.js'
import { BodyCapture, REDACTION_MARGIN } from './body-capture.js'
import { BodyFileReader, BodyFileWriter, bodiesFolderFor, hasBodyFiles } from './body-files.js'
import { Cassette, cassetteHeader } from './cassette.js'
import { CutBodyTally, type CutBodies } from './cut-bodies.js'
import { JournalLineStore, MemoryLineStore, journalPathFor, type LineStore } from './cassette-journal.js'
import { SharedLineStore, type SharedCassetteBackend } from './shared-line-store.js'
import { storeBody } from './store-body.js'
import { headerOf, storeHeaders } from './store-headers.js'
import { storeEventStream } from './store-stream.js'
import { isEventStreamHead, StreamTimeline } from './stream-timeline.js'

export interface CassetteRecorderOptions {
  /** Keep the cassette in this file as you go (snapshots) and write it on `close()`. */
  file?: string
  /** How the traffic was captured (header `source`). Default: `proxy` when given to `startProxy`, else `in-process`. */
  source?: 'proxy' | 'in-process'
  /**
   * `origin`: clients address a reverse proxy, so URLs are stored origin-form (`/path?query`) and
   * replay matches whatever host and port the client names. Default: `origin` when given to a
   * reverse-mode `startProxy` (as `toolstorm record --target` stores them), else `absolute`.
   */
  urlForm?: 'origin' | 'absolute'
  /** Reverse-mode targets, for the header. Default: the proxy's, when given to `startProxy`. */
  targets?: readonly string[]
  /**
   * Bytes stored per body at most (default 16 MiB); longer bodies keep a prefix marked `truncated`,
   * counted in `cutBodies`, and their replay breaks off.
   */
  bodyLimit?: number
  /** Header names never stored (case-insensitive), besides hop-by-hop and toolstorm's own. */
  excludeHeaders?: readonly string[]
  /** When given, the only header names stored (an allow-list; secret ones are still redacted). */
  includeHeaders?: readonly string[]
  /** Matching options written to the header (replay uses them unless told otherwise). */
  match?: Partial<MatchOptions>
  /**
   * Proxy replicas sharing runs through Redis (`--state`): lines go to the run's cassette stream
   * in Redis, and the cassette written (`file`, `save()`, `cassette()`) holds every replica's
   * exchanges of the runs this recorder saw, in call order. No journal and no snapshots: Redis
   * holds every finished exchange.
   */
  shared?: SharedCassetteBackend
  /** Milliseconds between snapshots while recording (default 1000; a snapshot never takes more than ~10% of the time). */
  snapshotIntervalMs?: number
}

export type RecorderState = 'recording' | 'closing' | 'closed'

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
  finishedAt: number | null
  /** Things to wait for before the line is written: the exchange's end, and each body it started. */
  waiting: number
  done: () => void
  readonly finished: Promise<void>
}

/** One awaited thing is over; the line can be written when none is left. */
function settle(entry: Entry): void {
  if (--entry.waiting === 0) entry.done()
}

const NO_RUN = '\u0000toolstorm-recorder'
const BODILESS_METHODS = new Set(['GET', 'HEAD', 'OPTIONS', 'TRACE', 'DELETE', 'CONNECT'])

/** Exchanges remembered after they were written, for effects reported late. */
const LATE_EFFECT_WINDOW = 4096

export class CassetteRecorder {
  readonly storm: Storm
  readonly observer: ExchangeObserver
  readonly #options: CassetteRecorderOptions
  readonly #bodyLimit: number
  readonly #exclude: ReadonlySet<string>
  readonly #only: ReadonlySet<string> | null
  readonly #recorded = new Date().toISOString()
  readonly #active = new Map<string, Entry>()
  readonly #written = new Map<string, number>()
  readonly #late = new Map<number, StoredEffect[]>()
  readonly #cut = new CutBodyTally()
  /** With a file (and no shared store): large bodies go to body files as each line is made, so the journal and snapshots stay small. */
  readonly #bodies: BodyFileWriter | null
  #store: LineStore | null = null
  #storeReady: Promise<LineStore>
  #seq = 0
  #chain: Promise<void> = Promise.resolve()
  #failure: unknown = null
  #state: RecorderState = 'recording'
  #timer: NodeJS.Timeout | null = null
  #snapshotting: Promise<void> | null = null
  #snapshotCount = 0
  #closing: Promise<void> = Promise.resolve()
  #keptPrevious = false
  /** Where the observer was given (`startProxy` says so): the defaults of `source`, `urlForm` and `targets`. */
  #front: ObserverFront | null = null
  readonly #onEffect: (message: unknown) => void

  constructor(storm: Storm, options: CassetteRecorderOptions = {}) {
    this.storm = storm
    this.#options = options
    const limit = options.bodyLimit ?? DEFAULT_BODY_LIMIT
    if (!Number.isInteger(limit) || limit < 0 || limit > MAX_BODY_LIMIT) {
      throw new ConfigError(`Failed to start recording: the body limit must be an integer from 0 to ${MAX_BODY_LIMIT} bytes, got ${limit}.`, { code: 'ERR_USAGE' })
    }
    this.#bodyLimit = limit
    this.#exclude = new Set((options.excludeHeaders ?? []).map((name) => name.toLowerCase()))
    this.#only = options.includeHeaders?.length ? new Set(options.includeHeaders.map((name) => name.toLowerCase())) : null
    const shared = options.shared
    this.#bodies = options.file && !shared ? new BodyFileWriter(bodiesFolderFor(options.file)) : null
    const store = shared ? Promise.resolve(new SharedLineStore(shared, () => JSON.stringify(this.#header(0)))) : options.file ? JournalLineStore.create(journalPathFor(options.file)) : Promise.resolve(new MemoryLineStore())
    this.#storeReady = store.then((ready) => (this.#store = ready))
    this.#storeReady.catch((error: unknown) => (this.#failure ??= error))
    this.#onEffect = (message) => this.#effect(message as EffectEvent)
    subscribe('toolstorm:commit:reported', this.#onEffect)
    this.observer = this.#createObserver()
    if (options.file && !shared) this.#schedule(options.snapshotIntervalMs ?? 1000)
  }

  /** Resolves once the recorder can write (its journal is open); rejects with why it cannot. */
  async ready(): Promise<void> {
    await this.#storeReady
  }

  get readyState(): RecorderState {
    return this.#state
  }

  /** Exchanges started so far. */
  get size(): number {
    return this.#seq
  }

  /** After `close()`: nothing was recorded and the cassette file already there was left as it was. */
  get keptPrevious(): boolean {
    return this.#keptPrevious
  }

  /**
   * Bodies cut at the body limit so far, per route. With a shared store (`--state`), after
   * `close()`: those of the cassette written, every replica's exchanges included.
   */
  get cutBodies(): CutBodies {
    const shared = this.#store instanceof SharedLineStore ? this.#store.written : null
    return shared ?? this.#cut.summary()
  }

  /** Bytes stored per body at most. */
  get bodyLimit(): number {
    return this.#bodyLimit
  }

  #createObserver(): ExchangeObserver {
    const entries = new WeakMap<Exchange, Entry>()
    return {
      attached: (front) => {
        this.#front = front
      },
      onStart: (exchange) => {
        if (this.#state !== 'recording') return
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
          finishedAt: null,
          waiting: 1,
          done,
          finished,
        }
        entries.set(exchange, entry)
        this.#active.set(exchange.id, entry)
        // Lines are written in arrival order, each once its exchange finished.
        this.#chain = this.#chain.then(async () => {
          await entry.finished
          const stored = await this.#line(entry)
          this.#cut.add(stored)
          const line = JSON.stringify(this.#bodies ? await this.#bodies.exchange(stored) : stored)
          const store = this.#store ?? (await this.#storeReady)
          await store.append(line, exchange.run.id)
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
        const upstream = entry?.upstream
        const body = upstream?.body
        if (!entry || !body || body.ended) return
        if (chunk) {
          upstream.timeline?.push(chunk)
          return body.push(chunk)
        }
        upstream.timeline?.finish()
        body.ended = true
        settle(entry)
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
        const client = entry?.client
        const body = client?.body
        if (!entry || !body || body.ended) return
        if (chunk) {
          client.timeline?.push(chunk)
          return body.push(chunk)
        }
        client.timeline?.finish()
        body.ended = true
        settle(entry)
      },
      onFinished: (exchange) => {
        const entry = entries.get(exchange)
        if (!entry || entry.finishedAt !== null) return
        entry.finishedAt = roundSeconds(exchange.elapsedSinceStart())
        settle(entry)
      },
    }
  }

  get #urlForm(): 'origin' | 'absolute' {
    return this.#options.urlForm ?? (this.#front?.targets.length ? 'origin' : 'absolute')
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
    const late = this.#late.get(seq) ?? []
    late.push(stored)
    this.#late.set(seq, late)
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
    const url = this.#urlForm === 'origin' ? redactor.url(exchange.url.pathname + exchange.url.search) : record?.url ?? redactor.url(exchange.url.href)
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
      route: record?.route ?? this.storm.routeOf(exchange.request.method, exchange.url, exchange.request.mcp),
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
    }
  }

  #header(exchanges: number): CassetteHeader {
    const { storm } = this
    const config = storm.config
    return cassetteHeader(
      {
        recorded: this.#recorded,
        source: this.#options.source ?? this.#front?.source ?? 'in-process',
        targets: (this.#options.targets ?? this.#front?.targets ?? []).map((target) => storm.redactor.url(target)),
        seed: config.seed,
        clock: storm.clock.kind,
        maxCalls: config.maxCalls,
        routes: { ...config.routes },
        // The report of a run that does not exist is empty and cheap: only its redacted rules are used.
        rules: storm.report(NO_RUN).rules,
        bodyLimit: this.#bodyLimit,
        match: { headers: [], ignoreQuery: [], ignoreBodyFields: [], normalize: [], ...this.#options.match },
        redaction: { keys: [...config.redact.keys], secrets: config.redact.secrets.length },
      },
      exchanges,
    )
  }

  #patchLate(): ((line: string) => string) | undefined {
    if (this.#late.size === 0) return undefined
    const late = this.#late
    return (line) => {
      const seq = Number(/^\{"seq":(\d+),/.exec(line)?.[1])
      const effects = late.get(seq)
      if (!effects) return line
      const exchange = JSON.parse(line) as CassetteExchange
      return JSON.stringify({ ...exchange, effects: [...exchange.effects, ...effects] })
    }
  }

  #schedule(delayMs: number): void {
    this.#timer = setTimeout(() => {
      this.#timer = null
      const started = performance.now()
      void this.snapshot().finally(() => {
        if (this.#state !== 'recording') return
        // Keep snapshot I/O to about a tenth of the time, however large the cassette grows.
        this.#schedule(Math.max(this.#options.snapshotIntervalMs ?? 1000, (performance.now() - started) * 10))
      })
    }, delayMs)
    this.#timer.unref()
  }

  /** Replace the cassette file with a complete snapshot of the exchanges written so far. */
  snapshot(): Promise<void> {
    const file = this.#options.file
    if (!file) return Promise.resolve()
    this.#snapshotting ??= (async () => {
      try {
        const store = await this.#storeReady
        if (store.count === this.#snapshotCount || store.count === 0) return
        const count = store.count
        await store.writeTo(file, JSON.stringify(this.#header(count)), undefined, this.#beforeRename)
        this.#snapshotCount = count
      } catch {
        // A failed snapshot (a full disk, for a moment) leaves the previous one in place; the
        // next snapshot or close() writes everything again, and close() reports its own failure.
      } finally {
        this.#snapshotting = null
      }
    })()
    return this.#snapshotting
  }

  /**
   * Stop recording: exchanges still running get `graceMs` to finish (then they are stored as
   * cancelled), and with a `file` the cassette is written atomically. Safe to call twice.
   */
  async close(options: { graceMs?: number } = {}): Promise<void> {
    if (this.#state !== 'recording') {
      await this.#closing
      return
    }
    this.#state = 'closing'
    this.#closing = (async () => {
      if (this.#timer) clearTimeout(this.#timer)
      await this.#drain(options.graceMs ?? 2000)
      await this.#snapshotting
      const store = await this.#storeReady
      // Nothing recorded: a cassette already there is kept, as the snapshots keep it (#29).
      this.#keptPrevious = this.#options.file !== undefined && !this.#options.shared && store.count === 0 && existsSync(this.#options.file)
      try {
        if (this.#options.file && !this.#keptPrevious) {
          await store.writeTo(this.#options.file, JSON.stringify(this.#header(store.count)), this.#patchLate(), this.#beforeRename)
          // The cassette in place no longer needs the body files of the one it replaced.
          await this.#bodies?.sweep()
        }
      } catch (error) {
        if (error instanceof ToolstormError) throw error
        const code = (error as NodeJS.ErrnoException).code ?? String(error)
        throw new ToolstormError('ERR_FILE_UNWRITABLE', `Failed to write the cassette ${this.#options.file}: ${code}. ${this.#options.shared ? 'Redis holds every exchange: write it with toolstorm report --state URL --cassette FILE.' : `The previous snapshot (if any) is intact, and the journal ${journalPathFor(this.#options.file as string)} holds every exchange.`}`, { cause: error })
      } finally {
        unsubscribe('toolstorm:commit:reported', this.#onEffect)
        this.#state = 'closed'
      }
      if (this.#failure) throw this.#failure
      if (this.#options.file) await store.dispose()
    })()
    await this.#closing
  }

  /** Stop recording without writing anything (the cassette file is left as it was). */
  async discard(): Promise<void> {
    if (this.#state === 'closed') return
    this.#state = 'closed'
    if (this.#timer) clearTimeout(this.#timer)
    unsubscribe('toolstorm:commit:reported', this.#onEffect)
    const store = await this.#storeReady.catch(() => null)
    await store?.dispose()
  }

  /** Wait for running exchanges (at most `graceMs`), then store the stragglers as they are. */
  async #drain(graceMs: number): Promise<void> {
    const chain = this.#chain
    let timer: NodeJS.Timeout | undefined
    await Promise.race([chain, new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs)))])
    clearTimeout(timer)
    for (const entry of this.#active.values()) entry.done()
    await this.#chain
  }

  /** Body files are made durable before the cassette that refers to them is renamed into place. */
  readonly #beforeRename = async (): Promise<void> => {
    await this.#bodies?.sync()
  }

  /** The recorded cassette, in memory, every body inline (stops nothing; call `close()` first for a final state). */
  async cassette(): Promise<Cassette> {
    await this.#chain
    const store = await this.#storeReady
    const exchanges: unknown[] = []
    const patch = this.#patchLate()
    const bodies = this.#bodies ? new BodyFileReader(this.#options.file as string, this.#bodies.folder) : null
    let number = 1
    for await (const line of store.lines()) {
      const exchange = JSON.parse(patch ? patch(line) : line) as CassetteFileExchange
      number++
      exchanges.push(bodies && hasBodyFiles(exchange) ? await bodies.exchange(exchange, number) : exchange)
    }
    const header = this.#header(exchanges.length)
    return Cassette.from(header, exchanges, this.#options.file ?? '<recording>')
  }

  /** Write the cassette recorded so far to `file`, atomically (large bodies in body files beside it, as `Cassette.save`). */
  async save(file: string): Promise<void> {
    if (this.#state === 'closing') throw new StateError('Failed to save the cassette: the recorder is closing. Await close() first.')
    // A closed file recorder has written its cassette and removed its journal: copy the cassette.
    if (this.#state === 'closed' && this.#options.file) return (await Cassette.load(this.#options.file)).save(file)
    await this.#chain
    if (this.#failure) throw this.#failure
    await (await this.cassette()).save(file)
  }
}

/** Create a recorder for `storm`'s exchanges; pass `recorder.observer` to the proxy or `intercept()`. */
export function createCassetteRecorder(storm: Storm, options: CassetteRecorderOptions = {}): CassetteRecorder {
  return new CassetteRecorder(storm, options)
}
