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
import type { UserDispatcher } from '../options/user-dispatcher.js'
import type { ExchangeObserver } from '../engine/exchange-flow.js'
import { createServe, type Serve } from '../engine/serve.js'
import type { Storm } from '../engine/storm.js'
import type { UpstreamSource } from '../engine/upstream-source.js'
import { createRequestControllerTransport } from './request-controller-sink.js'
import { createUndiciSource } from './undici-source.js'
import { transportPlugins, type TransportPluginOptions } from '../options/transport-plugins.js'
import { checkOptions } from '../options/check-options.js'
import { interceptOptionsSchema } from './intercept-options-schema.js'
import { readWebBody } from './read-web-body.js'
import { docsUrl } from '../docs-url.js'
import { effectsRegistry, type InProcessEffectSink } from '../effects/toolstorm-effects.js'
import { errorBody } from '../error-body.js'
import { InterceptionScopes, type Scoped } from './interception-scopes.js'

export interface InterceptOptions extends TransportPluginOptions {
  /** Which requests the storm handles; the rest pass through untouched. Default: all (or only `targets` when given). */
  filter?: (url: URL, method: string) => boolean
  /**
   * Send requests for an origin to another one, as a reverse proxy does:
   * `{ 'https://api.shipping.test': 'http://127.0.0.1:4000' }`. Reports keep the URL the client asked for.
   */
  targets?: Record<string, string>
  /** undici dispatcher used to forward (default: undici's global dispatcher). */
  dispatcher?: UserDispatcher
  /** Sees every exchange's bytes (recorders, model-call metadata). */
  observer?: ExchangeObserver
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

interface Entry extends Scoped<Entry> {
  storm: Storm
  options: InterceptOptions
  targets: Map<string, string>
  /** The engine's front door, with the storm's plug-ins. */
  serve: Serve
  source: UpstreamSource
  live: UpstreamSource
}

// The interceptors patch process-wide globals, so one interceptor serves every interception;
// each request goes to the interception of the async task that made it (interception-scopes.ts).
const scopes = new InterceptionScopes<Entry>()
let interceptor: BatchInterceptor<[ClientRequestInterceptor, FetchInterceptor]> | null = null

function ensureInterceptor(): void {
  if (interceptor) return
  interceptor = new BatchInterceptor({ name: 'toolstorm', interceptors: [new ClientRequestInterceptor(), new FetchInterceptor()] })
  interceptor.on('request', async ({ request, controller }) => {
    const owner = scopes.resolve()
    if (owner.type === 'none') return
    if (owner.type === 'ambiguous') return controller.respondWith(ambiguous(request, owner.active))
    const entry = owner.entry
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

/** An effect for one of `storm`'s calls: null when the call is not its own (another sink's, or a proxy's). */
function recordEffect(storm: Storm, call: string, name: string, key: string): boolean | null {
  if (!storm.ledger.exchange(call)) return null
  try {
    storm.effect(name, key, { call })
    return true
  } catch (error) {
    // The helper is fail-open: a refused effect (the run's limit, a bad name) is counted as dropped,
    // and in the run, whose contracts on effects then cannot pass.
    void storm.ledger.refuseEffect((error as Error).message, call)
    return false
  }
}

/**
 * The answer to a request no interception owns: interceptions of separate async tasks are active
 * and it was made outside all of them. 421 (Misdirected Request) with `x-should-retry: false`: no
 * SDK retries it, and the test that made it fails on it rather than on another test's fault.
 */
function ambiguous(request: Request, active: number): Response {
  const url = new URL(request.url)
  const message = `Failed to route "${request.method} ${url.origin}${url.pathname}" in-process: ${active} interceptions of separate async tasks are active (test.concurrent, or intercept() in overlapping tasks) and this request was made outside all of them (by a server, client or timer started before them), so no storm can own it. Make the request from inside the test that set up the storm, or run these tests one at a time (without test.concurrent). See ${docsUrl('in-process.md')}.`
  return new Response(JSON.stringify(errorBody('proxy_error', 'ERR_INTERCEPT_AMBIGUOUS', message)), { status: 421, headers: { 'content-type': 'application/json', 'x-should-retry': 'false' } })
}

/**
 * Route this process's `fetch` and `node:http` traffic through `storm` until disposed: the traffic
 * of the async task that calls it (and what that task awaits or schedules after), or all of it when
 * no other interception is active. See interception-scopes.ts.
 */
export function intercept(storm: Storm, options: InterceptOptions = {}): Interception {
  checkOptions('intercept()', interceptOptionsSchema, options)
  return interceptFor(null, storm, options)
}

/** `intercept()` on behalf of `owner` (the vitest fixture passes its test): see interception-scopes.ts. */
export function interceptFor(owner: object | null, storm: Storm, options: InterceptOptions = {}): Interception {
  ensureInterceptor()
  const targets = new Map(Object.entries(options.targets ?? {}).map(([from, to]) => [new URL(from).origin, new URL(to).origin]))
  const serve = createServe(storm, { ...transportPlugins(options, 'intercept()'), observer: options.observer })
  const live = createUndiciSource(options.dispatcher)
  const entry = scopes.enter(owner, (parent): Entry => ({ storm, options, targets, serve, source: options.source ?? live, live, parent, owner, disposed: false }))
  // reportEffect() / ToolstormEffects in this process record the storm's effects directly.
  const sink: InProcessEffectSink = { record: (call, name, key) => recordEffect(storm, call, name, key) }
  effectsRegistry().sinks.add(sink)
  let state: InterceptionState = 'active'
  const dispose = () => {
    if (state === 'disposed') return
    state = 'disposed'
    effectsRegistry().sinks.delete(sink)
    scopes.leave(entry)
    if (scopes.size === 0 && interceptor) {
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
