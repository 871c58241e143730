/**
 * The options of `intercept()` and `stormHandlers()` as each checks them: an unknown key is refused
 * with a did-you-mean (options/check-options.ts). Their shared fields are spelled once.
 */
import { z } from 'zod'
import { fn, object, optionsSchema, type OptionsShape } from '../options/check-options.js'
import type { ExchangePlugin } from '../engine/plugin.js'
import type { InterceptOptions } from './intercept.js'
import type { StormHandlerOptions } from './msw-handlers.js'

/** What `intercept()`, `stormHandlers()` and the vitest fixture share. */
export const inProcessShape: OptionsShape<Omit<InterceptOptions, 'targets' | 'source'>> = {
  filter: fn(),
  dispatcher: object('an undici Dispatcher'),
  observer: object('an ExchangeObserver'),
  modelCalls: z.boolean(),
  plugins: z.array(object<ExchangePlugin>('an ExchangePlugin')),
}

export const interceptTargetsSchema = z.record(z.url(), z.url())

export const interceptOptionsSchema = optionsSchema<InterceptOptions>({
  ...inProcessShape,
  targets: interceptTargetsSchema,
  source: object('an UpstreamSource'),
})

export const stormHandlerOptionsSchema = optionsSchema<StormHandlerOptions>({
  ...inProcessShape,
  tools: z.array(object<NonNullable<StormHandlerOptions['tools']>[number]>('an MSW request handler')),
  source: object('an UpstreamSource'),
})
