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
import { DEFAULT_BODY_LIMIT, MAX_CASSETTE_CLAIMS, type CassetteClaim, type CassetteHeader } from '../format/cassette-schema.js'
import type { Storm } from '../../engine/storm.js'
import { StateError } from '../../errors.js'
import { Cassette, cassetteHeader } from '../format/cassette.js'
import { CassetteWriter } from './cassette-writer.js'
import type { CutBodies } from '../format/cut-bodies.js'
import { ExchangeCapture } from './exchange-capture.js'
import { cassetteRecorderOptionsSchema, type CassetteRecorderOptions } from './recorder-options.js'
import { checkOptions } from '../../options/check-options.js'


export type RecorderState = 'recording' | 'closing' | 'closed'

const NO_RUN = '\u0000toolstorm-recorder'

export class CassetteRecorder {
  readonly storm: Storm
  readonly observer: ExchangeObserver
  readonly #options: CassetteRecorderOptions
  readonly #bodyLimit: number
  readonly #recorded = new Date().toISOString()
  readonly #capture: ExchangeCapture
  readonly #writer: CassetteWriter
  #state: RecorderState = 'recording'
  #closing: Promise<void> = Promise.resolve()
  /** Where the observer was given (`startProxy` says so): the defaults of `source`, `urlForm` and `targets`. */
  #front: ObserverFront | null = null
  /** Runs whose exchanges were recorded, in first-seen order: their claims go in the header. */
  readonly #runs = new Set<string>()
  /** The journal could not be opened: close() and save() report it. */
  #storeFailure: unknown = null

  constructor(storm: Storm, options: CassetteRecorderOptions = {}) {
    this.storm = storm
    this.#options = options
    const limit = options.bodyLimit ?? DEFAULT_BODY_LIMIT
    this.#bodyLimit = limit
    this.#writer = new CassetteWriter({ file: options.file, shared: options.shared, header: (count) => this.#header(count), snapshotIntervalMs: options.snapshotIntervalMs })
    this.#writer.ready().catch((error: unknown) => (this.#storeFailure ??= error))
    this.#capture = new ExchangeCapture(storm, {
      bodyLimit: limit,
      exclude: new Set((options.excludeHeaders ?? []).map((name) => name.toLowerCase())),
      only: options.includeHeaders?.length ? new Set(options.includeHeaders.map((name) => name.toLowerCase())) : null,
      urlForm: () => options.urlForm ?? (this.#front?.targets.length ? 'origin' : 'absolute'),
      attached: (front) => (this.#front = front),
      write: (exchange, run) => {
        this.#runs.add(run)
        return this.#writer.append(exchange, run)
      },
    })
    this.observer = this.#capture.observer
  }

  /** Resolves once the recorder can write (its journal is open); rejects with why it cannot. */
  async ready(): Promise<void> {
    await this.#writer.ready()
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

  /** Bytes stored per body at most. */
  get bodyLimit(): number {
    return this.#bodyLimit
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
        claims: this.#claims(),
      },
      exchanges,
    )
  }

  /**
   * The recorded runs' claims, judged now (each snapshot and the final write judge them again, so
   * effects reported late still count); already redacted, as the run keeps them.
   */
  #claims(): CassetteClaim[] {
    const claims: CassetteClaim[] = []
    for (const run of this.#runs) {
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

  /** Replace the cassette file with a complete snapshot of the exchanges written so far. */
  snapshot(): Promise<void> {
    return this.#writer.snapshot()
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
      this.#capture.stop()
      this.#writer.stopSnapshots()
      await this.#capture.drain(options.graceMs ?? 2000)
      try {
        await this.#writer.finish(this.#capture.patchLate())
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

  /** Stop recording without writing anything (the cassette file is left as it was). */
  async discard(): Promise<void> {
    if (this.#state === 'closed') return
    this.#state = 'closed'
    this.#capture.dispose()
    await this.#writer.dispose()
  }

  /** The recorded cassette, in memory, every body inline (stops nothing; call `close()` first for a final state). */
  async cassette(): Promise<Cassette> {
    await this.#capture.settled()
    return this.#writer.cassette(this.#capture.patchLate())
  }

  /** Write the cassette recorded so far to `file`, atomically (large bodies in body files beside it, as `Cassette.save`). */
  async save(file: string): Promise<void> {
    if (this.#state === 'closing') throw new StateError('Failed to save the cassette: the recorder is closing. Await close() first.')
    // A closed file recorder has written its cassette and removed its journal: copy the cassette.
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
  return new CassetteRecorder(storm, options)
}
