/**
 * One test scenario on a chosen transport: a real upstream, a storm in front of it, and the base
 * URL a client uses. Fault tests run the same scenario on every transport. The upstream reports
 * commits as a user's tool server would: through the proxy's sidecar, or with `storm.effect()`.
 */
import type { Report } from '../../src/engine/schema/report.js'
import type { StormConfigInput } from '../../src/engine/schema/config.js'
import { createStorm, type Storm } from '../../src/engine/storm.js'
import type { Clock } from '../../src/engine/clock.js'
import type { ProxyServer } from '../../src/proxy/proxy-server.js'
import { ToolstormEffects } from '../../src/effects/toolstorm-effects.js'
import type { ExchangeObserver } from '../../src/engine/exchange-flow.js'
import { openTransport, type Transport } from './transports.js'
import { startUpstream, type Upstream } from './upstream.js'

export interface Scenario {
  readonly transport: Transport
  readonly baseUrl: string
  readonly upstream: Upstream
  readonly storm: Storm
  readonly proxy: ProxyServer | null
  report(run?: string): Promise<Report>
  close(): Promise<void>
}

export async function startScenario(transport: Transport, config: StormConfigInput, options: { clock?: Clock; observer?: ExchangeObserver } = {}): Promise<Scenario> {
  const storm = createStorm(config, options.clock ? { clock: options.clock } : {})
  let effects: ToolstormEffects | null = null
  const upstream = await startUpstream({
    onCommit: async (name, key, request) => {
      if (effects) await effects.report(request, name, key)
      else storm.effect(name, key, { call: request.headers })
    },
  })
  const opened = await openTransport(transport, storm, upstream.url, options.observer ? { observer: options.observer } : {})
  const { proxy } = opened
  if (proxy) effects = new ToolstormEffects({ sidecarUrl: proxy.adminUrl })
  return {
    transport,
    baseUrl: opened.base,
    upstream,
    storm,
    proxy,
    report: async (run) => {
      if (!proxy) return storm.report(run)
      const response = await fetch(`${proxy.adminUrl}/report${run ? `?run=${encodeURIComponent(run)}` : ''}`, { headers: { authorization: `Bearer ${proxy.token}` } })
      return (await response.json()) as Report
    },
    close: async () => {
      await opened.close()
      await upstream.close()
    },
  }
}
