/**
 * Record through a real proxy in front of a real upstream, then talk to a replay server the
 * same way: a base URL (reverse mode) or an HTTP proxy (forward mode).
 */
import { fetch as undiciFetch, ProxyAgent, type RequestInit as UndiciRequestInit } from 'undici'
import { createCassetteRecorder } from '../../src/cassette/record/cassette-recorder.js'
import type { CassetteRecorderOptions } from '../../src/cassette/record/recorder-options.js'
import type { Cassette } from '../../src/cassette/format/cassette.js'
import type { StormConfigInput } from '../../src/engine/schema/config.js'
import { createStorm } from '../../src/engine/storm.js'
import { FAULT_RULES, startProxied } from './proxied.js'
import type { ProxyTransport } from './transports.js'

export interface Outcome {
  status?: number
  retryAfter?: string | null
  body?: string
  error?: string
}

export interface Client {
  /** The URL a request names: the server itself (reverse) or the real upstream's (forward). */
  readonly base: string
  request(path: string, init?: UndiciRequestInit): Promise<Outcome>
  close(): Promise<void>
}

/** A client that reaches `server` as a base URL (reverse) or as its HTTP proxy (forward, naming `upstream`). */
export function clientFor(mode: ProxyTransport, server: string, upstream: string): Client {
  const agent = mode === 'forward' ? new ProxyAgent({ uri: server, proxyTunnel: false }) : null
  const base = mode === 'forward' ? upstream : server
  return {
    base,
    async request(path, init = {}) {
      try {
        const response = await undiciFetch(base + path, { ...init, ...(agent ? { dispatcher: agent } : {}) })
        return { status: response.status, retryAfter: response.headers.get('retry-after'), body: await response.text() }
      } catch (error) {
        return { error: ((error as Error & { cause?: NodeJS.ErrnoException }).cause?.code ?? (error as Error).message) as string }
      }
    },
    close: async () => {
      await agent?.close()
    },
  }
}

/** The traffic of the record/replay scenario: a 429 with Retry-After, a read, a lost response, a retry, a gzip body. */
export async function shippingTraffic(client: Client): Promise<Outcome[]> {
  const json = { 'content-type': 'application/json' }
  return [
    await client.request('/items/a'),
    await client.request('/items/a?b=2&a=1'),
    await client.request('/ship', { method: 'POST', headers: json, body: '{"order":"o-1"}' }),
    await client.request('/ship', { method: 'POST', headers: json, body: '{"order":"o-1"}' }),
    await client.request('/gzip'),
  ]
}

/** Record `traffic` through a proxy in `mode`; the upstream is closed afterwards. */
export async function recordThroughProxy<T>(
  mode: ProxyTransport,
  traffic: (client: Client) => Promise<T>,
  options: { config?: StormConfigInput; recorder?: CassetteRecorderOptions } = {},
): Promise<{ cassette: Cassette; result: T; upstreamUrl: string; commits: string[] }> {
  const config = options.config ?? FAULT_RULES
  const storm = createStorm(config)
  const recorder = createCassetteRecorder(storm, { source: 'proxy', urlForm: mode === 'reverse' ? 'origin' : 'absolute', ...options.recorder })
  const proxied = await startProxied(mode, config, { storm, observer: recorder.observer })
  const client = clientFor(mode, proxied.proxy.url, proxied.upstream.url)
  try {
    const result = await traffic(client)
    await client.close()
    await proxied.close()
    await recorder.close()
    return { cassette: await recorder.cassette(), result, upstreamUrl: proxied.upstream.url, commits: [...proxied.upstream.commits] }
  } catch (error) {
    await client.close()
    await proxied.close()
    await recorder.close()
    throw error
  }
}
