/**
 * `useCassette(name)` in the vitest fixture: the test's HTTP traffic is recorded into a cassette on
 * its first run and answered from it, strictly, after that, as nock's back mode and Polly do.
 * Cassettes live next to the test, like `__snapshots__`: `__cassettes__/<test file>/<name>.cassette.jsonl`,
 * with URLs stored as paths (a fake server on a new port each run still matches). Re-record with
 * vitest's `-u` (`--update`) or `TOOLSTORM_UPDATE=1`.
 *
 * @example
 * test('ships once', async ({ useCassette }) => {
 *   await useCassette('ship-once')
 *   await agent.run()
 * })
 */
import { existsSync } from 'node:fs'
import path from 'node:path'
import { z } from 'zod'
import { Cassette } from '../cassette/format/cassette.js'
import { matchOptionsSchema, type MatchOptions } from '../cassette/format/cassette-schema.js'
import { checkOptions, object, optionsSchema } from '../options/check-options.js'
import { createCassetteRecorder, type CassetteRecorder } from '../cassette/record/cassette-recorder.js'
import { inProcessSource, replayStorm } from '../cassette/replay/replay-cassette.js'
import type { CassetteReplayOptions } from '../cassette/replay/replay-options.js'
import type { ReplaySession } from '../cassette/replay/replay-session.js'
import { docsUrl } from '../docs-url.js'
import type { StormConfigInput } from '../engine/schema/config.js'
import { createStorm } from '../create-storm.js'
import type { Storm } from '../engine/storm.js'
import { ConfigError, ToolstormError } from '../errors.js'
import { interceptFor, type Interception } from '../interceptors/intercept.js'

/**
 * `auto` (default): replay when the cassette exists, else record it. `replay`: replay, and fail when
 * it is missing. `record`: record it again, whatever is there. vitest's `-u` and `TOOLSTORM_UPDATE=1`
 * turn `auto` into `record`; vitest's CI mode (no new snapshots) makes a missing cassette an error.
 */
export type CassetteMode = 'auto' | 'replay' | 'record'

export interface UseCassetteOptions extends Pick<CassetteReplayOptions, 'order' | 'allowTruncated'> {
  mode?: CassetteMode
  /** Rules (and seed) the recording runs with: their faults are recorded as what the client got. */
  config?: StormConfigInput
  /**
   * Matching (`normalize`, `normalizePatterns`, `normalizePaths`, …): kept in the header when
   * recording; when replaying, instead of the header's (docs/cassettes.md#normalisers).
   */
  match?: Partial<MatchOptions>
}

const useCassetteOptionsSchema = optionsSchema<UseCassetteOptions>({
  mode: z.enum(['auto', 'replay', 'record']),
  config: object('a rules config ({ rules, seed, … })'),
  match: matchOptionsSchema.partial(),
  order: z.enum(['strict', 'any']),
  allowTruncated: z.boolean(),
})

export interface TestCassette {
  readonly name: string
  readonly file: string
  /** What this run does: `record` (the file is written when the test ends) or `replay`. */
  readonly mode: 'record' | 'replay'
  /** Recording: the storm the traffic goes through (its report, its effects). */
  readonly storm: Storm
  /** Replaying: the session (its verdict and table); null while recording. */
  readonly session: ReplaySession | null
}

export type UseCassette = (name: string, options?: UseCassetteOptions) => Promise<TestCassette>

/** What the fixture knows of the test: its file and vitest's snapshot update state. */
export interface CassetteTestContext {
  readonly owner: object
  readonly testFile: string
  /** vitest's `snapshotState.snapshotUpdateState`: `all` with `-u`, `none` in CI, else `new`. */
  readonly updateSnapshot: string | undefined
}

const NAME = /^[\w.-]+$/

/** Where `name`'s cassette is kept for `testFile`. */
export function cassettePathFor(testFile: string, name: string): string {
  return path.join(path.dirname(testFile), '__cassettes__', path.basename(testFile), `${name}.cassette.jsonl`)
}

/** What this run does with the cassette; `missing` when it must replay one that is not there (and why). */
function resolveMode(mode: CassetteMode, exists: boolean, context: CassetteTestContext): 'record' | 'replay' | { missing: string } {
  if (mode === 'record') return 'record'
  if (mode === 'replay') return exists ? 'replay' : { missing: 'its mode is replay' }
  if (context.updateSnapshot === 'all' || process.env.TOOLSTORM_UPDATE === '1') return 'record'
  if (exists) return 'replay'
  // vitest in CI writes no new snapshots (updateSnapshot 'none'): nor does a cassette fixture.
  return context.updateSnapshot === 'none' ? { missing: 'vitest runs in CI mode, where nothing new is recorded' } : 'record'
}

/**
 * The fixture's `useCassette` for one test, and what its end does: write the recording, or check
 * the replay was complete (throwing the typed error with the table of expected vs seen).
 */
export function createUseCassette(context: CassetteTestContext): { useCassette: UseCassette; finish(): Promise<void>; dispose(): void } {
  const active: Array<{ interception: Interception; recorder: CassetteRecorder | null; session: ReplaySession | null; close(): Promise<void> }> = []
  const useCassette: UseCassette = async (name, options = {}) => {
    if (!NAME.test(name)) throw new ConfigError(`Failed to use the cassette ${JSON.stringify(name)}: a name is letters, digits, ".", "_" and "-" (it names a file next to the test).`, { code: 'ERR_USAGE' })
    checkOptions('useCassette()', useCassetteOptionsSchema, options)
    const file = cassettePathFor(context.testFile, name)
    const exists = existsSync(file)
    const mode = resolveMode(options.mode ?? 'auto', exists, context)
    if (typeof mode === 'object') {
      throw new ToolstormError('ERR_FILE_UNREADABLE', `Failed to replay the cassette "${name}": ${file} does not exist and ${mode.missing}. Record it by running this test once outside CI (or with mode 'record'), and commit the file. See ${docsUrl('in-process.md#cassette-fixtures')}.`)
    }
    if (mode === 'record') {
      const storm = createStorm(options.config ?? {})
      // Recording again (mode record, -u) means a new cassette, not another segment of the old one.
      const recorder = createCassetteRecorder(storm, { file, urlForm: 'origin', overwrite: true, ...(options.match ? { match: options.match } : {}) })
      await recorder.ready()
      const interception = interceptFor(context.owner, storm, { observer: recorder.observer })
      active.push({ interception, recorder, session: null, close: () => recorder.close() })
      return { name, file, mode, storm, session: null }
    }
    const cassette = await Cassette.load(file)
    const replayOptions = { ...(options.order ? { order: options.order } : {}), ...(options.allowTruncated ? { allowTruncated: true } : {}), ...(options.match ? { match: options.match } : {}) }
    const storm = replayStorm(cassette, replayOptions)
    const source = inProcessSource(cassette, replayOptions, storm)
    // Served with the storm's plug-ins, as every transport: a replayed model call has its model and tokens in the report.
    const interception = interceptFor(context.owner, storm, { source })
    active.push({ interception, recorder: null, session: source.session, close: () => source.close() })
    return { name, file, mode, storm, session: source.session }
  }
  const dispose = () => {
    for (const entry of [...active].reverse()) if (entry.interception.readyState === 'active') entry.interception.dispose()
  }
  const finish = async () => {
    dispose()
    for (const entry of active) await entry.close()
    for (const { session } of active) {
      try {
        session?.assertDone()
      } catch (error) {
        // The table of expected vs seen goes in the message: it is what a failed test prints.
        if (error instanceof ToolstormError && error.details && !error.message.includes(error.details)) error.message = `${error.message}\n${error.details}`
        throw error
      }
    }
  }
  return { useCassette, finish, dispose }
}
