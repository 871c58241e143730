/**
 * `createStorm` and `parseConfig` as users and the CLI call them: the one place a storm's plug-ins
 * are chosen (those given, else `defaultPlugins()`), with the fault kinds they bring and the claims
 * plug-in's judge. Every transport then serves the storm with its own plug-ins. The engine's own
 * default is no plug-in, its kernel kinds, and claims left unjudged.
 *
 * @example
 * const storm = createStorm({ rules: [{ name: 'flaky-tool', route: 'tools/call get_weather', kind: 'tool_error' }] })
 * const quiet = createStorm(config, { modelCalls: false }) // model calls not recorded, through any transport
 */
import { judgeClaims } from './claims/judge-claims.js'
import { defaultFaults } from './default-faults.js'
import { defaultPlugins } from './default-plugins.js'
import type { FaultRegistry } from './engine/faults/fault-registry.js'
import type { ExchangePlugin } from './engine/plugin.js'
import type { StormConfig, StormConfigInput } from './engine/schema/config.js'
import { createStorm as createKernelStorm, parseConfig as parseKernelConfig, type Storm, type StormOptions as KernelOptions } from './engine/storm.js'

export interface StormOptions extends KernelOptions {
  /**
   * What every exchange of the storm goes through, whichever transport serves it (the proxy, the
   * replay server, `intercept()`, MSW handlers, in-process replay, the fixture, `toolstorm mcp`).
   * Default: `defaultPlugins({ modelCalls })`, MCP and model calls. Their fault kinds join the
   * storm's (`faults` defaults to them).
   */
  plugins?: readonly ExchangePlugin[]
  /** With the default plug-ins: record model calls (provider, model, tokens) in the report. Default true; see docs/streams.md. */
  modelCalls?: boolean
}

/** The plug-ins a storm made with `options` is served with: the ones given, else the default ones. */
export function stormPlugins(options: Pick<StormOptions, 'plugins' | 'modelCalls'> = {}): readonly ExchangePlugin[] {
  return options.plugins ?? defaultPlugins({ modelCalls: options.modelCalls !== false })
}

/** Create a storm from a config object, validated against the kinds its plug-ins bring (or `options.faults`), its claims judged by src/claims. */
export function createStorm(config: StormConfigInput | StormConfig = {}, options: StormOptions = {}): Storm {
  const { modelCalls: _modelCalls, ...kernel } = options
  // The default plug-ins' kinds are the default registry, built once.
  const faults = options.faults ?? (options.plugins ? undefined : defaultFaults)
  return createKernelStorm(config, { ...kernel, plugins: stormPlugins(options), ...(faults ? { faults } : {}), judgeClaims })
}

/** Parse a config, throwing a `ConfigError` that names the source, the field and what was expected. */
export function parseConfig(input: unknown, source = 'config', faults: FaultRegistry = defaultFaults): StormConfig {
  return parseKernelConfig(input, source, faults)
}
