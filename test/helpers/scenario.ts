/**
 * One test scenario on a chosen transport: a real upstream, a storm in front of it, and the base
 * URL a client uses. Fault tests run the same scenario on every transport.
 */
import type { Report } from '../../src/engine/schema/report.js'
import type { StormConfigInput } from '../../src/engine/schema/config.js'
import { createStorm, type Storm } from '../../src/engine/storm.js'
import { intercept } from '../../src/interceptors/intercept.js'
import type { Clock } from '../../src/engine/clock.js'
import { startUpstream, type Upstream } from './upstream.js'

export type TransportName = 'in-process'

export const TRANSPORTS: readonly TransportName[] = ['in-process']

export interface Scenario {
  readonly transport: TransportName
  readonly baseUrl: string
  readonly upstream: Upstream
  readonly storm: Storm
  report(run?: string): Promise<Report>
  close(): Promise<void>
}

export async function startScenario(transport: TransportName, config: StormConfigInput, options: { clock?: Clock } = {}): Promise<Scenario> {
  const storm = createStorm(config, options.clock ? { clock: options.clock } : {})
  const upstream = await startUpstream({
    onCommit: (name, key, request) => {
      storm.effect(name, key, { call: request.headers })
    },
  })
  switch (transport) {
    case 'in-process': {
      const interception = intercept(storm, { filter: (url) => url.origin === upstream.url })
      return {
        transport,
        baseUrl: upstream.url,
        upstream,
        storm,
        report: async (run) => storm.report(run),
        close: async () => {
          interception.dispose()
          await upstream.close()
        },
      }
    }
  }
}
