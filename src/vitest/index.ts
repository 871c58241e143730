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
import { contract } from '../engine/contracts/contract.js'
import type { StormConfigInput } from '../engine/schema/config.js'
import { createStorm, type Storm, type StormOptions } from '../engine/storm.js'
import { stormMatchers } from './matchers.js'
import { interceptFor, type InterceptOptions, type Interception } from '../interceptors/intercept.js'

/** `source` is the storm's (the config's file name); the fixture always intercepts to the real upstreams. */
export interface StormFixtureOptions extends StormOptions, Omit<InterceptOptions, 'source'> {
  /** Fail the test at teardown unless every rule triggered. Default true. */
  requireTriggered?: boolean
  /** Intercept this process's traffic with the storm. Default true. */
  intercept?: boolean
}

export type StormFactory = (config?: StormConfigInput, options?: StormFixtureOptions) => Storm

export const test = base.extend<{ storm: StormFactory }>({
  // eslint-disable-next-line no-empty-pattern
  storm: async ({}, use) => {
    const created: Array<{ storm: Storm; requireTriggered: boolean; interception: Interception | null }> = []
    // This test's storms see this test's traffic alone, under test.concurrent too (interception-scopes.ts).
    const owner = {}
    const factory: StormFactory = (config = {}, options = {}) => {
      const storm = createStorm(config, options)
      const { source: _configFile, ...interceptOptions } = options
      const interception = options.intercept === false ? null : interceptFor(owner, storm, interceptOptions)
      created.push({ storm, requireTriggered: options.requireTriggered !== false, interception })
      return storm
    }
    try {
      await use(factory)
    } finally {
      for (const entry of created.reverse()) entry.interception?.dispose()
    }
    for (const { storm, requireTriggered } of created) {
      if (!requireTriggered || storm.rules.length === 0) continue
      for (const run of storm.runIds().length ? storm.runIds() : ['default']) contract(storm.report(run)).requireTriggered().assertValid()
    }
  },
})

expect.extend(stormMatchers)

export { expect, describe } from 'vitest'
export { stormMatchers, type StormLike } from './matchers.js'
