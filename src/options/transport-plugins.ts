/**
 * A transport's own `plugins` and `modelCalls` options, deprecated: a storm is made with its
 * plug-ins (`createStorm(config, { plugins, modelCalls })`) and every transport serves it with
 * them. Given to a transport of a storm anyway, they still serve that transport (the hooks
 * included), and a warning says once per caller where they belong now.
 */
import { stormPlugins } from '../create-storm.js'
import { docsUrl } from '../docs-url.js'
import type { ExchangePlugin } from '../engine/plugin.js'

export interface TransportPluginOptions {
  /** @deprecated Give them to the storm: `createStorm(config, { plugins })`. */
  plugins?: readonly ExchangePlugin[]
  /** @deprecated Give it to the storm: `createStorm(config, { modelCalls })`. */
  modelCalls?: boolean
}

const warned = new Set<string>()

/** What `createServe` takes for a transport given `options`: nothing (the storm's plug-ins serve), or the transport's own, with the warning. */
export function transportPlugins(options: TransportPluginOptions, caller: string): { plugins?: readonly ExchangePlugin[] } {
  if (options.plugins === undefined && options.modelCalls === undefined) return {}
  if (!warned.has(caller)) {
    warned.add(caller)
    process.emitWarning(
      `${caller}: the plugins and modelCalls options belong to the storm now: createStorm(config, { plugins, modelCalls }), which every transport serves with. Given here, they serve this transport only. See ${docsUrl('extending.md#a-new-plug-in')}.`,
      { type: 'DeprecationWarning', code: 'TOOLSTORM_TRANSPORT_PLUGINS' },
    )
  }
  return { plugins: stormPlugins(options) }
}
