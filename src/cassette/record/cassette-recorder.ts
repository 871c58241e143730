/**
 * Record exchanges into a cassette: an `ExchangeObserver` for the proxy (`startProxy({ observer })`)
 * or in-process interception (`intercept(storm, { observer })`).
 *
 * Each exchange is stored in the order its request arrived, once it has finished, with the
 * redacted request, what the client received (or the fault), the upstream's own answer when the
 * client did not get it unchanged, timings and the effects the tool side reported for it.
 *
 * With a `file`, each line is appended to the cassette itself (version 4, append-only): the file is
 * a valid cassette at every moment, and a `kill -9` loses nothing written before it. A recorder
 * never replaces a cassette it did not write: it appends to it as its next segment (a restart on
 * the same file), or replaces it with `overwrite`; `ready()` says which.
 *
 * A recorder is an observer and a writer: `ExchangeCapture` (exchange-capture.ts) turns each
 * finished exchange into a line, `CassetteWriter` (cassette-writer.ts) keeps the lines durably;
 * this class owns their life (recording, closing, closed) and the cassette's header.
 *
 * @example
 * const recorder = createCassetteRecorder(storm)
 * using _ = intercept(storm, { observer: recorder.observer })
 * await agent.run()
 * await recorder.save('incident.cassette.jsonl')
 */
import type { ExchangeObserver, ObserverFront } from '../../engine/exchange-flow.js'
import { DEFAULT_BODY_LIMIT, defaultMatchOptions, MAX_CASSETTE_CLAIMS, type CassetteClaim, type CassetteExchange, type CassetteHeader, type StoredEffect } from '../format/cassette-schema.js'
import type { Storm } from '../../engine/storm.js'
import { NO_RUN } from '../../engine/run.js'
import { AdminApiError, ConfigError, StateError } from '../../errors.js'
import { Cassette, cassetteHeader } from '../format/cassette.js'
import { CassetteWriter } from './cassette-writer.js'
import type { RecordingStart } from './open-cassette-file.js'
import type { CutBodies } from '../format/cut-bodies.js'
import { ExchangeCapture } from './exchange-capture.js'
import { cassetteRecorderOptionsSchema, type CassetteRecorderOptions } from './recorder-options.js'
import { checkOptions } from '../../options/check-options.js'


export type RecorderState = 'recording' | 'closing' | 'closed'

/** Told of each exchange line as it is made (`position`: its place in this recording), and of effects reported after it. */
export interface RecorderListener {
  exchange(exchange: CassetteExchange, run: string): void
  lateEffects?(position: number, effects: readonly StoredEffect[]): void
}

/** Runs whose claims are followed (the most recent): a recording that runs for days sees many more. */
const RUNS_REMEMBERED = 10_000

export class CassetteRecorder {
  readonly storm: Storm
  readonly observer: ExchangeObserver
  readonly #options: CassetteRecorderOptions
  readonly #bodyLimit: number
  #recorded = new Date().toISOString()
  readonly #capture: ExchangeCapture
  readonly #writer: CassetteWriter
  #state: RecorderState = 'recording'
  #closing: Promise<void> = Promise.resolve()
  /** Where the observer was given (`startProxy` says so): the defaults of `source`, `urlForm` and `targets`. */
  #front: ObserverFront | null = null
  /** Runs whose exchanges were recorded, in first-seen order (the last 10,000): their claims are kept with the cassette. */
  readonly #runs = new Set<string>()
  /** The file could not be opened: close() and save() report it. */
  #storeFailure: unknown = null
  /** With a `file`, once ready: what was done with it. */
  #started: RecordingStart | null = null
  readonly #listeners: RecorderListener[] = []

  constructor(storm: Storm, options: CassetteRecorderOptions = {}) {
    this.storm = storm
    this.#options = options
    const limit = options.bodyLimit ?? DEFAULT_BODY_LIMIT
    this.#bodyLimit = limit
    this.#writer = new CassetteWriter({ file: options.file, shared: options.shared, header: (count) => this.#header(count), overwrite: options.overwrite, checkpointMs: options.checkpointMs, rotation: options.rotate ?? null, memory: options.memory ?? true, replica: storm.nonce })
    this.#capture = new ExchangeCapture(storm, {
      bodyLimit: limit,
      exclude: new Set((options.excludeHeaders ?? []).map((name) => name.toLowerCase())),
      only: options.includeHeaders?.length ? new Set(options.includeHeaders.map((name) => name.toLowerCase())) : null,
      urlForm: () => options.urlForm ?? (this.#front?.targets.length ? 'origin' : 'absolute'),
      attached: (front) => (this.#front = front),
      write: (exchange, run) => {
        if (!this.#runs.has(run)) {
          this.#runs.add(run)
          if (this.#runs.size > RUNS_REMEMBERED) this.#runs.delete(this.#runs.keys().next().value as string)
        }
        for (const listener of this.#listeners) listener.exchange(exchange, run)
        return this.#writer.append(exchange, run)
      },
      lateEffects: (seq, effects) => {
        for (const listener of this.#listeners) listener.lateEffects?.(seq, effects)
        return this.#writer.lateEffects(seq, effects)
      },
    })
    this.observer = this.#capture.observer
  }

  /**
   * Resolves once the recorder can write; with a `file`, with what it did with it (`created`,
   * `appended` as the next segment of the cassette there, or `replaced` with `overwrite`) and a
   * line saying so. Rejects with why it cannot (`ERR_CASSETTE_EXISTS`: a file it may not append to).
   */
  async ready(): Promise<RecordingStart | null> {
    try {
      return (this.#started = await this.#writer.ready())
    } catch (error) {
      this.#storeFailure ??= error
      throw error
    }
  }

  /** With a `file`, once `ready()` resolved: what was done with it (created, appended to, replaced). */
  get started(): RecordingStart | null {
    return this.#started
  }

  get readyState(): RecorderState {
    return this.#state
  }

  /** Exchanges started so far. */
  get size(): number {
    return this.#capture.size
  }

  /** After `close()`: nothing was recorded and the cassette file already there was left as it was. */
  get keptPrevious(): boolean {
    return this.#writer.keptPrevious
  }

  /**
   * Bodies cut at the body limit so far, per route. With a shared store (`--state`), after
   * `close()`: those of the cassette written, every replica's exchanges included.
   */
  get cutBodies(): CutBodies {
    return this.#writer.cutBodies
  }

  /** With a shared store (`--state`), after `close()`: other replicas still record into this cassette, and the last of them to stop writes it. */
  get leftToOthers(): { others: number } | null {
    return this.#writer.leftToOthers
  }

  /** With a `file`: the files this recording wrote to (the file, or its rotated parts), in order. */
  files(): Promise<string[]> {
    return this.#writer.files()
  }

  /** With a `file`: bytes of lines this recording wrote (not counting body files). */
  bytesWritten(): Promise<number> {
    return this.#writer.bytesWritten()
  }

  /** Bytes stored per body at most. */
  get bodyLimit(): number {
    return this.#bodyLimit
  }

  /** Resolves once the lines of every exchange started so far are made (and handed to listeners). */
  settled(): Promise<void> {
    return this.#capture.settled()
  }

  /** Be told of each exchange line as it is made (the flight recorder, src/incidents, keeps windows of them). */
  listen(listener: RecorderListener): void {
    this.#listeners.push(listener)
  }

  /** The header of a cassette of `count` exchanges of these runs only (their claims), as this recorder writes it. */
  headerFor(runs: readonly string[], count: number): CassetteHeader {
    return { ...this.#header(count, runs) }
  }

  #header(exchanges: number, runs: Iterable<string> = this.#runs): CassetteHeader {
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
        match: { ...defaultMatchOptions(), ...this.#options.match },
        redaction: { keys: [...config.redact.keys], secrets: config.redact.secrets.length },
        claims: this.#claims(runs),
      },
      exchanges,
    )
  }

  /**
   * The recorded runs' claims, judged now (each checkpoint and the final write judge them again, so
   * effects reported late still count); already redacted, as the run keeps them.
   */
  #claims(runs: Iterable<string>): CassetteClaim[] {
    const claims: CassetteClaim[] = []
    for (const run of runs) {
      for (const claim of this.storm.claimsOf(run) ?? []) {
        if (claims.length >= MAX_CASSETTE_CLAIMS) return claims
        claims.push({ run, ...claim })
      }
    }
    return claims
  }

  /**
   * Forget what `run` recorded: its exchanges leave the cassette and the memory (a long search of
   * many runs keeps only the runs still going; `toolstorm explore` takes a failing run's cassette
   * first). Only a recorder that keeps its exchanges in memory can (no `file`, no shared store);
   * the others are refused (ERR_STATE). Resolves with how many exchanges were dropped.
   */
  async forget(run: string): Promise<number> {
    // Not waiting for the lines still to come (other runs' exchanges may be slow): those of this run are not written.
    const dropped = await this.#writer.forget(run)
    if (dropped !== null) this.#capture.forget(run)
    if (dropped === null) throw new StateError(`Failed to forget the recording of run ${run}: this recorder writes ${this.#options.file ? `the cassette ${this.#options.file}` : 'into the shared store'}, which keeps every exchange. Only a recorder in memory forgets a run.`)
    this.#runs.delete(run)
    return dropped
  }

  /** Append what changed (claims, rules) and make the file durable now, as the writer does about once a second. */
  checkpoint(): Promise<void> {
    return this.#writer.checkpoint()
  }

  /**
   * Stop recording: exchanges still running get `graceMs` to finish (then they are stored as
   * cancelled), and with a `file` the cassette gets its last claims and its end line. Safe to call twice.
   */
  async close(options: { graceMs?: number } = {}): Promise<void> {
    if (this.#state !== 'recording') {
      await this.#closing
      return
    }
    this.#state = 'closing'
    this.#closing = (async () => {
      this.#capture.stop()
      this.#writer.stopCheckpoints()
      await this.#capture.drain(options.graceMs ?? 2000)
      try {
        await this.#writer.finish()
      } finally {
        this.#capture.dispose()
        this.#state = 'closed'
      }
      const failure = this.#capture.failure ?? this.#storeFailure
      if (failure) throw failure
      if (this.#options.file) await this.#writer.dispose()
    })()
    await this.#closing
  }

  /** Stop recording without finishing the file (what was appended stays, a valid cassette). */
  async discard(): Promise<void> {
    if (this.#state === 'closed') return
    this.#state = 'closed'
    this.#capture.dispose()
    await this.#writer.dispose()
  }

  /** The recorded cassette, in memory, every body inline (stops nothing; call `close()` first for a final state). */
  async cassette(): Promise<Cassette> {
    await this.#capture.settled()
    return this.#writer.cassette()
  }

  /** One run's exchanges recorded so far, renumbered as a cassette of their own; with a file, read off it without loading the others. */
  async cassetteOfRun(run: string): Promise<Cassette> {
    await this.#capture.settled()
    const fromFile = await this.#writer.cassetteOfRun(run)
    if (fromFile) return fromFile
    const recorded = await this.#writer.cassette()
    const exchanges = recorded.exchanges.filter((exchange) => exchange.run === run)
    if (exchanges.length === 0) throw new AdminApiError('ERR_ADMIN_NOT_FOUND', `Failed to export the cassette: no exchange of run "${run}" was recorded.`)
    return Cassette.from(recorded.header, exchanges.map((exchange, index) => ({ ...exchange, seq: index + 1 })), `the recording of run ${run}`)
  }

  /** Write the cassette recorded so far to `file`, atomically (large bodies in body files beside it, as `Cassette.save`). */
  async save(file: string): Promise<void> {
    if (this.#state === 'closing') throw new StateError('Failed to save the cassette: the recorder is closing. Await close() first.')
    // A closed file recorder has finished its cassette: copy it.
    if (this.#state === 'closed' && this.#options.file) return (await Cassette.load(this.#options.file)).save(file)
    await this.#capture.settled()
    const failure = this.#capture.failure ?? this.#storeFailure
    if (failure) throw failure
    await (await this.cassette()).save(file)
  }
}

/**
 * Create a recorder for `storm`'s exchanges; pass `recorder.observer` to the proxy or `intercept()`.
 * An unknown option or a wrong value is refused before anything is opened (ERR_CONFIG_INVALID).
 */
export function createCassetteRecorder(storm: Storm, options: CassetteRecorderOptions = {}): CassetteRecorder {
  checkOptions('createCassetteRecorder()', cassetteRecorderOptionsSchema, options)
  if (options.rotate && !options.file) throw new ConfigError('Failed to create the recorder: rotate needs a file (the parts are named after it).', { code: 'ERR_CONFIG_INVALID' })
  if (options.rotate && options.shared) throw new ConfigError('Failed to create the recorder: rotate is not supported with a shared store (--state): the replicas\' cassette is written once, at stop.', { code: 'ERR_CONFIG_INVALID' })
  return new CassetteRecorder(storm, options)
}
