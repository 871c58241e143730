/**
 * `createStorm` and `parseConfig` as users and the CLI call them: with every fault kind the
 * default plug-ins bring (src/default-faults.ts) and the claims plug-in's judge. The engine's own
 * default is its kernel kinds, and claims left unjudged.
 *
 * @example
 * const storm = createStorm({ rules: [{ name: 'flaky-tool', route: 'tools/call get_weather', kind: 'tool_error' }] })
 */
import { judgeClaims } from './claims/judge-claims.js'
import { defaultFaults } from './default-faults.js'
import type { FaultRegistry } from './engine/faults/fault-registry.js'
import type { StormConfig, StormConfigInput } from './engine/schema/config.js'
import { createStorm as createKernelStorm, parseConfig as parseKernelConfig, type Storm, type StormOptions } from './engine/storm.js'

/** Create a storm from a config object (validated against `options.faults`, default: every default kind), its claims judged by src/claims. */
export function createStorm(config: StormConfigInput | StormConfig = {}, options: StormOptions = {}): Storm {
  return createKernelStorm(config, { ...options, faults: options.faults ?? defaultFaults, judgeClaims })
}

/** Parse a config, throwing a `ConfigError` that names the source, the field and what was expected. */
export function parseConfig(input: unknown, source = 'config', faults: FaultRegistry = defaultFaults): StormConfig {
  return parseKernelConfig(input, source, faults)
}
