/** The options of the vitest fixture's `storm(config, options)`, checked as `intercept()` checks its own (options/check-options.ts). */
import { z } from 'zod'
import { object, optionsSchema } from '../options/check-options.js'
import type { Clock } from '../engine/clock.js'
import type { FaultRegistry } from '../engine/faults/fault-registry.js'
import { inProcessShape, interceptTargetsSchema } from '../interceptors/intercept-options-schema.js'
import type { StormFixtureOptions } from './index.js'

export const stormFixtureOptionsSchema = optionsSchema<StormFixtureOptions>({
  ...inProcessShape,
  targets: interceptTargetsSchema,
  clock: object<Clock>('a clock (RealClock, VirtualClock)'),
  source: z.string(),
  faults: object<FaultRegistry>('a fault registry (faultRegistryOf(plugins) from toolstorm/extend)'),
  requireTriggered: z.boolean(),
  intercept: z.boolean(),
})
