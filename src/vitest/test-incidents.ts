/**
 * `--incidents` for the vitest fixture (`toolstormIncidents`, or `TOOLSTORM_INCIDENTS=DIR`): each
 * storm's exchanges are held by the proxy's flight recorder (src/incidents), and as the test ends
 * its runs are decided: kept as incident cassettes when the test failed (marked with its failure)
 * or when something else went wrong in them (an upstream 5xx or reset, a fault that fired, a
 * duplicate effect). docs/incidents.md#in-a-test-suite
 */
import path from 'node:path'
import { createCassetteRecorder, type CassetteRecorder } from '../cassette/record/cassette-recorder.js'
import { DEFAULT_BODY_LIMIT } from '../cassette/format/cassette-schema.js'
import type { Storm } from '../engine/storm.js'
import type { FlightRecorder } from '../incidents/flight-recorder.js'
import { incidentOptionsSchema, type IncidentOptions } from '../incidents/incident-options.js'
import { IncidentStore, type IncidentEntry } from '../incidents/incident-store.js'
import { flightRecorderIn } from '../incidents/start-flight-recorder.js'
import { checkOptions } from '../options/check-options.js'
import { ConfigError } from '../errors.js'

/** The folder, or the folder with the flight recorder's bounds (`--window-exchanges` …): what `startProxy({ incidents })` takes, less its recorder. */
export type FixtureIncidents = string | Omit<IncidentOptions, 'recorder'>

/** What a test needs of its own task to name its incidents. */
export interface IncidentTask {
  readonly name: string
  readonly file: { readonly filepath: string }
  readonly result?: { readonly state?: string; readonly errors?: ReadonlyArray<{ readonly message?: string }> } | undefined
}

// One store per folder in this module instance (a test file's, or a worker's without isolation):
// opened once, it counts what it kept for the bounds and never names two incidents alike.
const stores = new Map<string, Promise<IncidentStore>>()

/** The fixture's incidents option, checked: the injected value, else `TOOLSTORM_INCIDENTS`, else none. */
export function fixtureIncidents(injected: FixtureIncidents | undefined, env: NodeJS.ProcessEnv = process.env): Omit<IncidentOptions, 'recorder'> | null {
  const given = injected ?? (env.TOOLSTORM_INCIDENTS || undefined)
  if (given === undefined) return null
  const options = typeof given === 'string' ? { dir: given } : given
  const caller = injected === undefined ? 'the toolstorm/vitest fixture (TOOLSTORM_INCIDENTS)' : 'the toolstorm/vitest fixture (toolstormIncidents)'
  checkOptions(caller, incidentOptionsSchema, options)
  if ('recorder' in options) throw new ConfigError(`Failed to call ${caller}: "recorder" is not an option here (each storm's exchanges are held by a recorder of its own).`, { code: 'ERR_USAGE' })
  return { ...options, dir: path.resolve(options.dir) }
}

/** The incident folder, opened (created, its index read and its bounds honoured) once per folder. */
export function incidentStore(options: Omit<IncidentOptions, 'recorder'>): Promise<IncidentStore> {
  let store = stores.get(options.dir)
  if (!store) {
    store = IncidentStore.open(options.dir, { maxIncidents: options.maxIncidents, maxBytes: options.maxBytes })
    stores.set(options.dir, store)
    store.catch(() => stores.delete(options.dir))
  }
  return store
}

/** A storm's flight recorder in a test: its observer goes to the storm's interception. */
export class TestIncidents {
  readonly recorder: CassetteRecorder
  readonly flight: FlightRecorder
  readonly #kept: IncidentEntry[] = []

  constructor(store: IncidentStore, storm: Storm, options: Omit<IncidentOptions, 'recorder'>, task: IncidentTask) {
    // The lines a proxy without --record holds for its flight recorder: nothing written but the incidents.
    this.recorder = createCassetteRecorder(storm, { memory: false, bodyLimit: DEFAULT_BODY_LIMIT })
    // Named after the test (and its run when it named one): the storm's run is usually `default`.
    const base = `${path.basename(task.file.filepath).replace(/\.[cm]?[jt]sx?$/, '')}-${task.name}`
    this.flight = flightRecorderIn(store, this.recorder, storm.ledger, null, options, {
      label: (run) => (run === 'default' ? base : `${base}-${run}`),
      onKept: (entry) => this.#kept.push(entry),
    })
  }

  /**
   * The test ended: when it failed (`failure`), each of its runs is marked with why; then every run
   * is decided. The incidents kept.
   */
  async finish(storm: Storm, failure: string | null): Promise<IncidentEntry[]> {
    if (failure !== null) {
      for (const run of storm.runIds()) {
        try {
          await this.flight.mark(run, failure)
        } catch {
          // No exchange of this run went through the storm: nothing to keep.
        }
      }
    }
    await this.flight.close()
    await this.recorder.close()
    return this.#kept
  }
}

/** Why a finished test is an incident: its first error (its first two lines), with its name and file. */
export function testFailure(task: IncidentTask, extra: unknown): string | null {
  const failed = task.result?.state === 'fail' || extra !== undefined
  if (!failed) return null
  const message = task.result?.errors?.[0]?.message ?? (extra instanceof Error ? extra.message : String(extra))
  // Its first two lines: a contract's error says what failed on its second.
  const lines = message
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean)
    .slice(0, 2)
  return `vitest: ${path.relative(process.cwd(), task.file.filepath)} > ${task.name} failed: ${lines.join(': ')}`.slice(0, 500)
}
