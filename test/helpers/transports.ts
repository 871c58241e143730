/**
 * One vocabulary for the four ways an exchange reaches a storm: in-process (`intercept()`), MSW
 * handlers (`stormHandlers()` in `setupServer`), and the proxy in reverse (base-URL) and forward
 * (HTTP_PROXY-style absolute URLs) mode. A test names the transport; `through()` starts it in front
 * of `upstream` and stops it when the test finishes (`onTestFinished`), so no afterEach is written.
 */
import { setupServer } from 'msw/node'
import { ProxyAgent } from 'undici'
import { onTestFinished } from 'vitest'
import type { ExchangeObserver } from '../../src/engine/exchange-flow.js'
import type { Storm } from '../../src/engine/storm.js'
import { intercept } from '../../src/interceptors/intercept.js'
import { stormHandlers } from '../../src/interceptors/msw-handlers.js'
import { startProxy } from '../../src/proxy/proxy-server.js'

export type Transport = 'intercept' | 'msw' | 'reverse' | 'forward'

export const TRANSPORTS: readonly Transport[] = ['intercept', 'msw', 'reverse', 'forward']

export interface Through {
  /** The origin the client addresses (the proxy in reverse mode, the upstream otherwise). */
  readonly base: string
  /** Extra `fetch` init for this transport (forward mode's dispatcher). */
  readonly init: { dispatcher?: ProxyAgent }
}

/** `storm` in front of `upstream` (an origin) through `transport`, until the current test finishes; `observer` sees every exchange (a recorder). */
export async function through(transport: Transport, storm: Storm, upstream: string, observer?: ExchangeObserver): Promise<Through> {
  const only = (url: URL) => url.origin === upstream
  const observing = observer ? { observer } : {}
  switch (transport) {
    case 'intercept': {
      const interception = intercept(storm, { filter: only, ...observing })
      onTestFinished(() => interception.dispose())
      return { base: upstream, init: {} }
    }
    case 'msw': {
      const server = setupServer(...stormHandlers(storm, { filter: only, ...observing }))
      server.listen({ onUnhandledRequest: 'bypass' })
      onTestFinished(() => server.close())
      return { base: upstream, init: {} }
    }
    case 'reverse':
    case 'forward': {
      const proxy = await startProxy({ storm, ...observing, ...(transport === 'reverse' ? { targets: [upstream] } : {}) })
      const dispatcher = transport === 'forward' ? new ProxyAgent({ uri: proxy.url, proxyTunnel: false }) : undefined
      onTestFinished(async () => {
        await dispatcher?.close()
        await proxy.close()
      })
      return { base: transport === 'reverse' ? proxy.url : upstream, init: dispatcher ? { dispatcher } : {} }
    }
  }
}
