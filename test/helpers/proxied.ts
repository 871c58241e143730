/**
 * A real upstream behind a real proxy, in reverse or forward mode, with the tool server
 * reporting commits through the effects helper (as a user's tool server would).
 */
import { ProxyAgent, type Dispatcher } from 'undici'
import type { StormConfigInput } from '../../src/engine/schema/config.js'
import type { Report } from '../../src/engine/schema/report.js'
import { ToolstormEffects } from '../../src/effects/toolstorm-effects.js'
import { startProxy, type ProxyServer, type ProxyOptions } from '../../src/proxy/proxy-server.js'
import type { ProxyTransport } from './transports.js'
import { startUpstream, type Upstream } from './upstream.js'

export interface Proxied {
  readonly mode: ProxyTransport
  readonly proxy: ProxyServer
  readonly upstream: Upstream
  /** The URL a client requests: the proxy (reverse) or the upstream itself (forward, via the proxy). */
  readonly base: string
  /** undici dispatcher that sends requests the right way for the mode. */
  readonly dispatcher: Dispatcher | undefined
  readonly effects: ToolstormEffects
  report(run?: string): Promise<Report>
  admin(path: string, init?: RequestInit): Promise<Response>
  close(): Promise<void>
}

export const FAULT_RULES: StormConfigInput = {
  seed: 42,
  rules: [
    { name: 'items-busy', route: 'GET /items/*', kind: 'rate_limit', calls: [1], delay: 2 },
    { name: 'lost-ack', route: 'POST /ship', kind: 'response_lost', calls: [1] },
  ],
}

export async function startProxied(mode: ProxyTransport, config: StormConfigInput = FAULT_RULES, extra: Partial<ProxyOptions> = {}): Promise<Proxied> {
  let effects: ToolstormEffects | null = null
  const upstream = await startUpstream({
    onCommit: async (name, key, request) => {
      await effects?.report(request, name, key)
    },
  })
  const proxy = await startProxy({ ...(mode === 'reverse' ? { targets: [upstream.url] } : {}), config, ...extra })
  effects = new ToolstormEffects({ sidecarUrl: proxy.adminUrl })
  const dispatcher = mode === 'forward' ? new ProxyAgent({ uri: proxy.url, proxyTunnel: false }) : undefined
  let closed: Promise<void> | null = null
  const admin = (path: string, init: RequestInit = {}) => fetch(proxy.adminUrl + path, { ...init, headers: { authorization: `Bearer ${proxy.token}`, ...(init.headers as Record<string, string>) } })
  return {
    mode,
    proxy,
    upstream,
    base: mode === 'reverse' ? proxy.url : upstream.url,
    dispatcher,
    effects,
    report: async (run) => (await (await admin(`/report${run ? `?run=${encodeURIComponent(run)}` : ''}`)).json()) as Report,
    admin,
    // Once: a test may close it itself (to read what closing does), and closing() closes it again.
    close: () =>
      (closed ??= (async () => {
        await dispatcher?.close()
        await proxy.close()
        await upstream.close()
      })()),
  }
}
