/**
 * A fake model provider behind toolstorm on one of three paths: in-process (`intercept`), the
 * proxy in reverse mode (the client's base URL is the proxy) or in forward mode (the client
 * sends absolute URLs to the proxy through an undici ProxyAgent, as with HTTP_PROXY).
 */
import { ProxyAgent } from 'undici'
import { afterEach } from 'vitest'
import type { Clock } from '../../src/engine/clock.js'
import type { ExchangeObserver } from '../../src/engine/exchange-flow.js'
import type { StormConfigInput } from '../../src/engine/schema/config.js'
import type { Report } from '../../src/engine/schema/report.js'
import { createStorm } from '../../src/create-storm.js'
import type { Storm } from '../../src/engine/storm.js'
import { intercept } from '../../src/interceptors/intercept.js'
import { startProxy, type ProxyServer } from '../../src/proxy/proxy-server.js'
import { startModelUpstream, type ModelUpstream, type ModelUpstreamOptions } from './model-upstream.js'

export type ModelPath = 'in-process' | 'reverse' | 'forward'

export const MODEL_PATHS: readonly ModelPath[] = ['in-process', 'reverse', 'forward']

export interface ModelScenario {
  readonly path: ModelPath
  readonly upstream: ModelUpstream
  readonly storm: Storm
  readonly proxy: ProxyServer | null
  /** The origin a client talks to (the proxy in reverse mode, the upstream otherwise). */
  readonly base: string
  /** Extra `fetch` options for this path (the forward-mode dispatcher), for SDK `fetchOptions` and raw fetch. */
  readonly fetchOptions: { dispatcher?: ProxyAgent }
  report(): Report
  /** The report once no call is running any more (the proxy sees a client leave a moment later). */
  settled(): Promise<Report>
  close(): Promise<void>
}

async function settle(storm: Storm): Promise<Report> {
  const deadline = performance.now() + 3_000
  while (true) {
    const report = storm.report()
    if (report.calls.every((call) => call.outcome !== 'running') || performance.now() > deadline) return report
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

export async function startModelScenario(path: ModelPath, config: StormConfigInput, options: ModelUpstreamOptions & { observer?: ExchangeObserver; clock?: Clock } = {}): Promise<ModelScenario> {
  const upstream = await startModelUpstream(options)
  const storm = createStorm(config, options.clock ? { clock: options.clock } : {})
  const observer = options.observer ? { observer: options.observer } : {}
  if (path === 'in-process') {
    const interception = intercept(storm, { filter: (url) => url.origin === upstream.url, ...observer })
    return {
      path,
      upstream,
      storm,
      proxy: null,
      base: upstream.url,
      fetchOptions: {},
      report: () => storm.report(),
      settled: () => settle(storm),
      close: async () => {
        interception.dispose()
        await upstream.close()
      },
    }
  }
  const proxy = await startProxy({ ...(path === 'reverse' ? { targets: [upstream.url] } : {}), storm, ...observer })
  const dispatcher = path === 'forward' ? new ProxyAgent({ uri: proxy.url, proxyTunnel: false }) : undefined
  return {
    path,
    upstream,
    storm,
    proxy,
    base: path === 'reverse' ? proxy.url : upstream.url,
    fetchOptions: dispatcher ? { dispatcher } : {},
    report: () => storm.report(),
    settled: () => settle(storm),
    close: async () => {
      await dispatcher?.close()
      await proxy.close()
      await upstream.close()
    },
  }
}

/** The routes of the three model APIs, as rules name them. */
export const CHAT = 'POST /v1/chat/completions'
export const RESPONSES = 'POST /v1/responses'
export const MESSAGES = 'POST /v1/messages'

/** Scenarios a test file starts, each closed after its test (`const scenarios = modelScenarios()` at the top level). */
export function modelScenarios(): { start: typeof startModelScenario } {
  let current: ModelScenario | null = null
  afterEach(async () => {
    await current?.close()
    current = null
  })
  return {
    async start(...args) {
      await current?.close()
      current = once(await startModelScenario(...args))
      return current
    },
  }
}

/** A scenario whose close() may be called again (a test that closes it itself, then the hook). */
function once(scenario: ModelScenario): ModelScenario {
  let closed: Promise<void> | null = null
  return { ...scenario, close: () => (closed ??= scenario.close()) }
}
