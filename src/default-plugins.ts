/**
 * The one plug-in list every transport passes to the engine's front door (engine/serve.ts): the
 * proxy, the replay server, intercept(), MSW handlers and the demo. Fresh instances per call: a
 * plug-in may keep state for the transport that uses it (MCP's legacy SSE sessions).
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
