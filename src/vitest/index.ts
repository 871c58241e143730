/**
 * A vitest fixture: each test gets an isolated storm factory. Storms it creates intercept the
 * test's fetch and node:http traffic, and the test fails at teardown when a configured rule never
 * triggered (opt out per storm with `requireTriggered: false`), like ToolStorm's pytest fixture.
 *
 * @example
 * import { test } from 'toolstorm/vitest'
 * test('recovers from a read timeout', async ({ storm }) => {
 *   storm({ rules: [{ name: 'one-time', route: 'GET /read', kind: 'timeout', calls: [1] }] })
 *   expect((await fetch(url)).status).toBe(504)
 *   expect((await fetch(url)).status).toBe(200)
 * })
 */
import { expect, test as base } from 'vitest'
import { docsUrl } from '../docs-url.js'
import { contract } from '../contracts/contract.js'
import { ContractFailedError } from '../errors.js'
import type { StormConfigInput } from '../engine/schema/config.js'
import { createStorm, type StormOptions } from '../create-storm.js'
import type { Storm } from '../engine/storm.js'
import { stormMatchers } from './matchers.js'
import { checkOptions } from '../options/check-options.js'
import { stormFixtureOptionsSchema } from './fixture-options-schema.js'
import { interceptFor, type InterceptOptions, type Interception } from '../interceptors/intercept.js'
import { createUseCassette, type UseCassette } from './use-cassette.js'
import { combineObservers } from '../combine-observers.js'
import { fixtureIncidents, incidentStore, testFailure, TestIncidents, type FixtureIncidents } from './test-incidents.js'

/** `source` is the storm's (the config's file name), and so are its `plugins`; the fixture always intercepts to the real upstreams. */
export interface StormFixtureOptions extends StormOptions, Omit<InterceptOptions, 'source' | 'plugins' | 'modelCalls'> {
  /** Fail the test at teardown unless every rule triggered. Default true. */
  requireTriggered?: boolean
  /** Intercept this process's traffic with the storm. Default true. */
  intercept?: boolean
}

export type StormFactory = (config?: StormConfigInput, options?: StormFixtureOptions) => Storm

/**
 * Rules were configured and not one request reached the storm: "never triggered" would hide the
 * real mistake, which is almost always how the client was wired, so say that and name the causes.
 */
function unreached(storm: Storm): string {
  const names = storm.rules.map((rule) => `"${rule.name}"`).join(', ')
  return [
    `toolstorm: no request reached the storm, so its rule(s) ${names} could not trigger. Likely causes:`,
    '  - the client was created before storm() was called: the openai and Anthropic SDKs (and others) keep the fetch they found when constructed. Create the client after storm(), inside the test.',
    "  - the client has its own transport, which in-process interception does not see (undici's request, Pool or Client, a fetch of its own, a native module, a child process): send it through the proxy instead (docs/proxy.md).",
    '  - the storm\'s filter or targets option leaves these requests out, or the code under test never made them.',
    `See ${docsUrl('in-process.md')}.`,
  ].join('\n')
}

export const test = base.extend<{ storm: StormFactory; useCassette: UseCassette; toolstormIncidents: FixtureIncidents | undefined }>({
  // Set for a whole project with vitest's `provide` (docs/incidents.md#in-a-test-suite), else TOOLSTORM_INCIDENTS.
  toolstormIncidents: [undefined, { injected: true }],
  storm: async ({ onTestFinished, task, toolstormIncidents }, use) => {
    const created: Array<{ storm: Storm; requireTriggered: boolean; interception: Interception | null; incidents: TestIncidents | null }> = []
    const incidentOptions = fixtureIncidents(toolstormIncidents)
    const store = incidentOptions ? await incidentStore(incidentOptions) : null
    // This test's storms (and cassettes) see this test's traffic alone, under test.concurrent too (interception-scopes.ts).
    const owner = task
    const factory: StormFactory = (config = {}, options = {}) => {
      checkOptions('storm() (the toolstorm/vitest fixture)', stormFixtureOptionsSchema, options)
      // Its plug-ins (and the kinds they bring) are the storm's: the interception serves it with them.
      const storm = createStorm(config, options)
      const { source: _configFile, plugins: _plugins, modelCalls: _modelCalls, ...interceptOptions } = options
      // With incidents, the proxy's flight recorder holds the storm's exchanges as it would the proxy's.
      const incidents = store && incidentOptions && options.intercept !== false ? new TestIncidents(store, storm, incidentOptions, task) : null
      const observer = combineObservers(incidents?.recorder.observer, interceptOptions.observer)
      const interception = options.intercept === false ? null : interceptFor(owner, storm, { ...interceptOptions, ...(observer ? { observer } : {}) })
      created.push({ storm, requireTriggered: options.requireTriggered !== false, interception, incidents })
      return storm
    }
    // Checked as the test finishes (after this teardown), not thrown from the teardown: vitest
    // records an error thrown there twice, and printed the failure twice.
    onTestFinished(async () => {
      let failed: unknown = undefined
      try {
        for (const { storm, requireTriggered, interception } of created) {
          if (!requireTriggered || storm.rules.length === 0) continue
          const runs = storm.runIds().length ? storm.runIds() : ['default']
          if (interception && runs.every((run) => storm.report(run).calls.length === 0)) throw new ContractFailedError(unreached(storm))
          for (const run of runs) contract(storm.report(run)).requireTriggered().assertValid()
        }
      } catch (error) {
        failed = error
      }
      // The test's runs are decided once it is known whether it failed (these checks included).
      const failure = testFailure(task, failed)
      for (const { storm, incidents } of created) await incidents?.finish(storm, failure)
      if (failed !== undefined) throw failed
    })
    try {
      await use(factory)
    } finally {
      for (const entry of [...created].reverse()) entry.interception?.dispose()
    }
  },
  useCassette: async ({ onTestFinished, task }, use) => {
    const snapshotState = expect.getState().snapshotState as { snapshotUpdateState?: string } | undefined
    const cassettes = createUseCassette({ owner: task, testFile: task.file.filepath, updateSnapshot: snapshotState?.snapshotUpdateState })
    // Written or checked as the test finishes, as the storm's rules are (a teardown's error is recorded twice).
    onTestFinished(() => cassettes.finish())
    try {
      await use(cassettes.useCassette)
    } finally {
      cassettes.dispose()
    }
  },
})

expect.extend(stormMatchers)

export { expect, describe } from 'vitest'
export { stormMatchers, type StormLike } from './matchers.js'
export { exploreTests } from './explore-tests.js'
export { cassettePathFor, type CassetteMode, type TestCassette, type UseCassette, type UseCassetteOptions } from './use-cassette.js'
