/** The options of the vitest fixture's `storm(config, options)`, checked as `intercept()` checks its own (options/check-options.ts). */
import { z } from 'zod'
import { object, optionsSchema } from '../options/check-options.js'
import type { Clock } from '../engine/clock.js'
import { inProcessShape, interceptTargetsSchema } from '../interceptors/intercept-options-schema.js'
import type { StormFixtureOptions } from './index.js'

export const stormFixtureOptionsSchema = optionsSchema<StormFixtureOptions>({
  ...inProcessShape,
  targets: interceptTargetsSchema,
  clock: object<Clock>('a clock (RealClock, VirtualClock)'),
  source: z.string(),
  requireTriggered: z.boolean(),
  intercept: z.boolean(),
})
