/**
 * The default plug-ins of a storm (`createStorm` from the package root chooses them, src/create-storm.ts):
 * every transport serving the storm serves it with them (engine/serve.ts). Fresh instances per
 * call: a plug-in may keep state for the storm that uses it (MCP's legacy SSE sessions).
 */
import type { ExchangePlugin } from './engine/plugin.js'
import { mcpPlugin } from './mcp/mcp-plugin.js'
import { modelCallsPlugin } from './model-calls/model-calls-plugin.js'

export interface DefaultPluginOptions {
  /** Record model calls (provider, model, tokens) in the report. Default true; see docs/streams.md. */
  modelCalls?: boolean
}

export function defaultPlugins(options: DefaultPluginOptions = {}): ExchangePlugin[] {
  return [mcpPlugin(), modelCallsPlugin({ record: options.modelCalls !== false })]
}
