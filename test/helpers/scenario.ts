/**
 * One test scenario on a chosen transport: a real upstream, a storm in front of it, and the base
 * URL a client uses. Fault tests run the same scenario on every transport.
 */
import type { Report } from '../../src/engine/schema/report.js'
import type { StormConfigInput } from '../../src/engine/schema/config.js'
import { createStorm } from '../../src/create-storm.js'
import type { Storm } from '../../src/engine/storm.js'
import { intercept } from '../../src/interceptors/intercept.js'
import type { Clock } from '../../src/engine/clock.js'
import { startProxy, type ProxyServer } from '../../src/proxy/proxy-server.js'
import { ToolstormEffects } from '../../src/effects/toolstorm-effects.js'
import type { ExchangeObserver } from '../../src/engine/exchange-flow.js'
import { startUpstream, type Upstream } from './upstream.js'

export type TransportName = 'in-process' | 'proxy'

export const TRANSPORTS: readonly TransportName[] = ['in-process', 'proxy']

export interface Scenario {
  readonly transport: TransportName
  readonly baseUrl: string
  readonly upstream: Upstream
  readonly storm: Storm
  readonly proxy: ProxyServer | null
  report(run?: string): Promise<Report>
  close(): Promise<void>
}

export async function startScenario(transport: TransportName, config: StormConfigInput, options: { clock?: Clock; observer?: ExchangeObserver } = {}): Promise<Scenario> {
  const storm = createStorm(config, options.clock ? { clock: options.clock } : {})
  let effects: ToolstormEffects | null = null
  const upstream = await startUpstream({
    onCommit: async (name, key, request) => {
      if (effects) await effects.report(request, name, key)
      else storm.effect(name, key, { call: request.headers })
    },
  })
  switch (transport) {
    case 'in-process': {
      const interception = intercept(storm, { filter: (url) => url.origin === upstream.url, ...(options.observer ? { observer: options.observer } : {}) })
      return {
        transport,
        baseUrl: upstream.url,
        upstream,
        storm,
        proxy: null,
        report: async (run) => storm.report(run),
        close: async () => {
          interception.dispose()
          await upstream.close()
        },
      }
    }
    case 'proxy': {
      const proxy = await startProxy({ targets: [upstream.url], storm, ...(options.observer ? { observer: options.observer } : {}) })
      effects = new ToolstormEffects({ sidecarUrl: proxy.adminUrl })
      return {
        transport,
        baseUrl: proxy.url,
        upstream,
        storm,
        proxy,
        report: async (run) => {
          const response = await fetch(`${proxy.adminUrl}/report${run ? `?run=${encodeURIComponent(run)}` : ''}`, { headers: { authorization: `Bearer ${proxy.token}` } })
          return (await response.json()) as Report
        },
        close: async () => {
          await proxy.close()
          await upstream.close()
        },
      }
    }
  }
}
