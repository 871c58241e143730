/**
 * `lintRules` as users, the CLI and the admin API call it: knowing the route names the default
 * plug-ins give (MCP's `tools/call create_shipment`), so a rule on one is not taken for a typo.
 *
 * @example
 * lintRules(parseConfig({ rules: [{ name: 'x', route: 'tools/cal create_shipment', kind: 'reset' }] }))
 * // [{ rule: 'x', route: 'tools/cal create_shipment', message: '… "tools/cal" is not an MCP method. Did you mean "tools/call create_shipment"?' }]
 */
import { defaultPlugins } from './default-plugins.js'
import type { ExchangePlugin } from './engine/plugin.js'
import { lintRules as lintKernelRules, type RuleWarning } from './lint/lint-rules.js'
import type { StormConfig } from './engine/schema/config.js'

/** One warning per rule whose route can match no route name, with `plugins`' names known. */
export function lintRules(config: Pick<StormConfig, 'routes' | 'rules'>, plugins: readonly ExchangePlugin[] = defaultPlugins()): RuleWarning[] {
  return lintKernelRules(config, plugins.flatMap((plugin) => (plugin.checkRoute ? [plugin.checkRoute] : [])))
}
