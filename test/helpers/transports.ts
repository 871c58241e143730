/**
 * The one vocabulary for the ways an exchange reaches a storm: in-process (`intercept()`), MSW
 * handlers (`stormHandlers()` in `setupServer`), and the proxy in reverse (base-URL) and forward
 * (HTTP_PROXY-style absolute URLs) mode, plus `https`: forward mode intercepting HTTPS (CONNECT,
 * the proxy's own CA) to an HTTPS upstream. A test names the transport; `through()` starts it in
 * front of `upstream` and stops it when the test finishes (`onTestFinished`), so no afterEach is
 * written; `openTransport()` is the same without the teardown, for helpers that own a close().
 * The replay server is not a transport of a live storm: tests that replay start it themselves.
 */
import { setupServer } from 'msw/node'
import { ProxyAgent } from 'undici'
import type { ExchangeObserver } from '../../src/engine/exchange-flow.js'
import type { Storm } from '../../src/engine/storm.js'
import { intercept } from '../../src/interceptors/intercept.js'
import { stormHandlers } from '../../src/interceptors/msw-handlers.js'
import { startProxy, type ProxyOptions, type ProxyServer } from '../../src/proxy/proxy-server.js'
import { closing } from './teardown.js'

export type Transport = 'intercept' | 'msw' | 'reverse' | 'forward' | 'https'

/** The four plain-HTTP transports: what a behaviour of every exchange runs through. */
export const TRANSPORTS = ['intercept', 'msw', 'reverse', 'forward'] as const satisfies readonly Transport[]

/** The four and `https`: the intercepting forward proxy in front of an HTTPS upstream. */
export const EVERY_TRANSPORT = [...TRANSPORTS, 'https'] as const satisfies readonly Transport[]

/** The in-process transports: the storm runs in the test's own process, no proxy. */
export const IN_PROCESS = ['intercept', 'msw'] as const satisfies readonly Transport[]

/**
 * Every plain-HTTP transport but MSW handlers: for the long model-SDK files, where MSW is left out
 * for its cost in CI time (provider-errors, event-faults and stream-faults cover SDKs through MSW).
 */
export const WITHOUT_MSW = ['intercept', 'reverse', 'forward'] as const satisfies readonly Transport[]

/** The transports a client reaches with a plain `fetch(base + path)`, no dispatcher. */
export const BASE_URL_TRANSPORTS = ['intercept', 'msw', 'reverse'] as const satisfies readonly Transport[]

/** The proxy's plain-HTTP modes: behaviour of the proxy itself (its admin API, its sidecar). */
export const PROXY_TRANSPORTS = ['reverse', 'forward'] as const satisfies readonly Transport[]
export type ProxyTransport = (typeof PROXY_TRANSPORTS)[number]

export interface TransportOptions {
  /** Sees every exchange (a recorder). */
  readonly observer?: ExchangeObserver
  /** More proxy options (proxy transports only). */
  readonly proxy?: Partial<ProxyOptions>
  /** PEM of the CA the HTTPS upstream's certificate chains to (`https` only). */
  readonly upstreamCa?: string
}

export interface Through {
  readonly transport: Transport
  /** The origin the client addresses (the proxy in reverse mode, the upstream otherwise). */
  readonly base: string
  /** Extra `fetch` init for this transport (the forward modes' dispatcher). */
  readonly init: { dispatcher?: ProxyAgent }
  /** The proxy, on the proxy transports. */
  readonly proxy: ProxyServer | null
}

export interface OpenTransport extends Through {
  close(): Promise<void>
}

/** `storm` in front of `upstream` (an origin) through `transport`, until `close()`. */
export async function openTransport(transport: Transport, storm: Storm, upstream: string, options: TransportOptions = {}): Promise<OpenTransport> {
  const only = (url: URL) => url.origin === upstream
  const observing = options.observer ? { observer: options.observer } : {}
  switch (transport) {
    case 'intercept': {
      const interception = intercept(storm, { filter: only, ...observing })
      return { transport, base: upstream, init: {}, proxy: null, close: async () => interception.dispose() }
    }
    case 'msw': {
      const server = setupServer(...stormHandlers(storm, { filter: only, ...observing }))
      // As docs/in-process.md tells msw 2 users: its unread copy of each mocked response would hold
      // a cancel of the body (the SDKs' retries) forever (mswjs/interceptors#799). Read to its end,
      // not cancelled: for node:http clients the copy is a stream a cancel breaks (ERR_INVALID_STATE).
      server.events.on('response:mocked', ({ response }) => void response.body?.pipeTo(new WritableStream()).catch(() => undefined))
      server.listen({ onUnhandledRequest: 'bypass' })
      return { transport, base: upstream, init: {}, proxy: null, close: async () => server.close() }
    }
    case 'reverse':
    case 'forward':
    case 'https': {
      const https = transport === 'https' ? { connectPorts: [Number(new URL(upstream).port)], ...(options.upstreamCa ? { upstreamCa: [options.upstreamCa] } : {}) } : {}
      const proxy = await startProxy({ ...(transport === 'reverse' ? { targets: [upstream] } : {}), ...https, ...options.proxy, storm, ...observing })
      const dispatcher =
        transport === 'forward' ? new ProxyAgent({ uri: proxy.url, proxyTunnel: false })
        : transport === 'https' ? new ProxyAgent({ uri: proxy.url, requestTls: { ca: proxy.ca!.certificatePem } })
        : undefined
      return {
        transport,
        base: transport === 'reverse' ? proxy.url : upstream,
        init: dispatcher ? { dispatcher } : {},
        proxy,
        close: async () => {
          await dispatcher?.close()
          await proxy.close()
        },
      }
    }
  }
}

/** `storm` in front of `upstream` through `transport`, until the current test finishes. */
export async function through(transport: Transport, storm: Storm, upstream: string, options: TransportOptions = {}): Promise<Through> {
  return closing(await openTransport(transport, storm, upstream, options))
}
