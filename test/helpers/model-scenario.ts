/**
 * A fake model provider behind toolstorm on one of the transports (transports.ts): in-process
 * (`intercept`), MSW handlers, the proxy in reverse mode (the client's base URL is the proxy) or in
 * forward mode (the client sends absolute URLs to the proxy through an undici ProxyAgent, as with
 * HTTP_PROXY).
 */
import type { ProxyAgent } from 'undici'
import { onTestFinished } from 'vitest'
import type { Clock } from '../../src/engine/clock.js'
import type { ExchangeObserver } from '../../src/engine/exchange-flow.js'
import type { StormConfigInput } from '../../src/engine/schema/config.js'
import type { Report } from '../../src/engine/schema/report.js'
import { createStorm } from '../../src/create-storm.js'
import type { Storm } from '../../src/engine/storm.js'
import type { ProxyServer } from '../../src/proxy/proxy-server.js'
import { startModelUpstream, type ModelUpstream, type ModelUpstreamOptions } from './model-upstream.js'
import { openTransport, type Transport } from './transports.js'

export interface ModelScenario {
  readonly transport: Transport
  readonly upstream: ModelUpstream
  readonly storm: Storm
  readonly proxy: ProxyServer | null
  /** The origin a client talks to (the proxy in reverse mode, the upstream otherwise). */
  readonly base: string
  /** Extra `fetch` options for this transport (the forward-mode dispatcher), for SDK `fetchOptions` and raw fetch. */
  readonly fetchOptions: { dispatcher?: ProxyAgent }
  report(): Report
  /** The report once no call is running or read on any more (the proxy sees a client leave a moment later). */
  settled(): Promise<Report>
  close(): Promise<void>
}

async function settle(storm: Storm): Promise<Report> {
  const deadline = performance.now() + 3_000
  while (true) {
    const report = storm.report()
    if (report.calls.every((call) => call.outcome !== 'running') || performance.now() > deadline) break
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  // A cut model stream's record is final once its upstream was read on (read-on.ts).
  await storm.settled()
  return storm.report()
}

export async function startModelScenario(transport: Transport, config: StormConfigInput, options: ModelUpstreamOptions & { observer?: ExchangeObserver; clock?: Clock } = {}): Promise<ModelScenario> {
  const upstream = await startModelUpstream(options)
  const storm = createStorm(config, options.clock ? { clock: options.clock } : {})
  const opened = await openTransport(transport, storm, upstream.url, options.observer ? { observer: options.observer } : {})
  return {
    transport,
    upstream,
    storm,
    proxy: opened.proxy,
    base: opened.base,
    fetchOptions: opened.init,
    report: () => storm.report(),
    settled: () => settle(storm),
    close: async () => {
      await opened.close()
      await upstream.close()
    },
  }
}

/** The routes of the three model APIs, as rules name them. */
export const CHAT = 'POST /v1/chat/completions'
export const RESPONSES = 'POST /v1/responses'
export const MESSAGES = 'POST /v1/messages'

/**
 * Scenarios a test file starts, each closed when its test finishes (`const scenarios = modelScenarios()`
 * at the top level). Starting one closes the test's previous one first: two interceptions would nest.
 */
export function modelScenarios(): { start: typeof startModelScenario } {
  let current: ModelScenario | null = null
  return {
    async start(...args) {
      await current?.close()
      const scenario = once(await startModelScenario(...args))
      current = scenario
      onTestFinished(async () => {
        await scenario.close()
        if (current === scenario) current = null
      })
      return scenario
    },
  }
}

/** A scenario whose close() may be called again (a test that closes it itself, then the hook). */
function once(scenario: ModelScenario): ModelScenario {
  let closed: Promise<void> | null = null
  return { ...scenario, close: () => (closed ??= scenario.close()) }
}
