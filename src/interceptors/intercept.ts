/**
 * In-process interception: every request made with global `fetch` or `node:http` in this process
 * runs through a storm, exactly as it would through the proxy.
 *
 * @example
 * const storm = createStorm({ rules: [{ name: 'busy', route: 'GET /inventory/*', kind: 'rate_limit', delay: 1 }] })
 * using interception = intercept(storm)
 * await fetch('http://127.0.0.1:4000/inventory/sku-1') // 429
 *
 * @note `node:http` is intercepted through its CommonJS module object: code must use the default
 * import (`import http from 'node:http'`); `import * as http` namespaces are not patched.
 */
import { BatchInterceptor } from '@mswjs/interceptors'
import { ClientRequestInterceptor } from '@mswjs/interceptors/ClientRequest'
import { FetchInterceptor } from '@mswjs/interceptors/fetch'
import type { Dispatcher } from 'undici'
import type { ExchangeObserver } from '../engine/exchange-flow.js'
import type { ExchangePlugin } from '../engine/plugin.js'
import { createServe, type Serve } from '../engine/serve.js'
import type { Storm } from '../engine/storm.js'
import type { UpstreamSource } from '../engine/upstream-source.js'
import { createRequestControllerTransport } from './request-controller-sink.js'
import { createUndiciSource } from './undici-source.js'
import { defaultPlugins } from '../default-plugins.js'
import { readWebBody } from './read-web-body.js'

export interface InterceptOptions {
  /** Which requests the storm handles; the rest pass through untouched. Default: all (or only `targets` when given). */
  filter?: (url: URL, method: string) => boolean
  /**
   * Send requests for an origin to another one, as a reverse proxy does:
   * `{ 'https://api.shipping.test': 'http://127.0.0.1:4000' }`. Reports keep the URL the client asked for.
   */
  targets?: Record<string, string>
  /** undici dispatcher used to forward (default: undici's global dispatcher). */
  dispatcher?: Dispatcher
  /** Sees every exchange's bytes (recorders, model-call metadata). */
  observer?: ExchangeObserver
  /** Record model calls (provider, model, tokens) in the report. Default true; see docs/streams.md. */
  modelCalls?: boolean
  /** What every exchange goes through (engine/plugin.ts). Default `defaultPlugins({ modelCalls })`: MCP and model calls. */
  plugins?: readonly ExchangePlugin[]
  /**
   * Where responses come from (docs/architecture.md). Default: the real upstreams, through undici.
   * A cassette source (`replaySource` from `toolstorm/cassette`) answers from a cassette instead;
   * what it does not answer goes to the real upstreams.
   */
  source?: UpstreamSource
}

export type InterceptionState = 'active' | 'disposed'

/** A live interception. Dispose it (or use `using`) to restore the network. */
export interface Interception {
  readonly storm: Storm
  readonly readyState: InterceptionState
  dispose(): void
  [Symbol.dispose](): void
}

interface Entry {
  storm: Storm
  options: InterceptOptions
  targets: Map<string, string>
  /** The engine's front door, with this interception's plug-ins (their state: legacy MCP sessions seen). */
  serve: Serve
  source: UpstreamSource
  live: UpstreamSource
}

// The interceptors patch process-wide globals, so one interceptor serves every interception;
// the most recent active one handles requests.
const stack: Entry[] = []
let interceptor: BatchInterceptor<[ClientRequestInterceptor, FetchInterceptor]> | null = null

function ensureInterceptor(): void {
  if (interceptor) return
  interceptor = new BatchInterceptor({ name: 'toolstorm', interceptors: [new ClientRequestInterceptor(), new FetchInterceptor()] })
  interceptor.on('request', async ({ request, controller }) => {
    const entry = stack[stack.length - 1]
    if (!entry) return
    const url = new URL(request.url)
    const target = entry.targets.get(url.origin)
    if (entry.options.filter ? !entry.options.filter(url, request.method) : entry.targets.size > 0 && target === undefined) return
    const headers: Record<string, string> = {}
    request.headers.forEach((value, name) => {
      headers[name] = value
    })
    const upstreamUrl = target === undefined ? url : new URL(url.pathname + url.search, target)
    // A body read to name the request (MCP) is read once: the sink takes it from here.
    let body: Buffer | undefined
    await entry.serve(
      { method: request.method, url, headers, hasBody: request.body !== null },
      {
        readBody: (limit) => readWebBody(() => request.arrayBuffer(), limit).then((read) => ((body = read.body), { bytes: read.bytes })),
        open: (exchange) => createRequestControllerTransport(request, controller, { exchange, headers, upstreamUrl, source: entry.source, live: entry.live, ...(body ? { body } : {}) }),
      },
    )
  })
  interceptor.apply()
}

/** Route this process's `fetch` and `node:http` traffic through `storm` until disposed. */
export function intercept(storm: Storm, options: InterceptOptions = {}): Interception {
  ensureInterceptor()
  const targets = new Map(Object.entries(options.targets ?? {}).map(([from, to]) => [new URL(from).origin, new URL(to).origin]))
  const serve = createServe(storm, { plugins: options.plugins ?? defaultPlugins({ modelCalls: options.modelCalls !== false }), observer: options.observer })
  const live = createUndiciSource(options.dispatcher)
  const entry: Entry = { storm, options, targets, serve, source: options.source ?? live, live }
  stack.push(entry)
  let state: InterceptionState = 'active'
  const dispose = () => {
    if (state === 'disposed') return
    state = 'disposed'
    const index = stack.lastIndexOf(entry)
    if (index !== -1) stack.splice(index, 1)
    if (stack.length === 0 && interceptor) {
      interceptor.dispose()
      interceptor = null
    }
  }
  return {
    storm,
    get readyState() {
      return state
    },
    dispose,
    [Symbol.dispose]: dispose,
  }
}
