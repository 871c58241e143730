/**
 * The engine's front door: one call per exchange, the same for every transport (the proxy,
 * intercept(), MSW handlers, the demo, stdio). It names the request (the storm's plug-ins), begins
 * the exchange, wraps the transport (plug-ins) and runs the flow with the observers (plug-ins and
 * the user's). A new transport is a sink (an `ExchangeTransport`) and one `serve()` call.
 *
 * In memory, `serve` stays synchronous for a request no plug-in reads the body of, and the flow's
 * pass-through fast path is taken when no fault and no observer want the exchange.
 */
import type { Exchange } from './exchange.js'
import { runExchange, type ExchangeObserver } from './exchange-flow.js'
import type { ExchangeTransport } from './exchange-transport.js'
import type { ExchangePlugin, Naming, RequestHead } from './plugin.js'
import type { RequestReading } from './request-reading.js'
import { protocolHooksOf } from './protocol-hooks.js'
import type { BeginRequest, Storm } from './storm.js'

export interface ServeRequest extends RequestHead {
  /** The run the address names; it wins over `x-toolstorm-run`. */
  readonly run?: string | undefined
}

/** What a transport gives `serve` for one request. */
export interface ServeEntry {
  /**
   * Read the body before the exchange begins, up to `limit` bytes: its bytes, or `bytes: null`
   * when it is longer (what was read is still forwarded, then the rest). Null: the client left
   * while sending it; nothing is served.
   */
  readBody(limit: number): Promise<{ bytes: Uint8Array | null } | null>
  /** The transport of the exchange that began. */
  open(exchange: Exchange): ExchangeTransport
}

export interface ServeOptions<E extends ServeEntry = ServeEntry> {
  /**
   * @deprecated The storm's plug-ins serve it (`createStorm(config, { plugins })`). A list given
   * here serves this transport instead, hooks included (a transport's own `plugins` option, deprecated too).
   */
  readonly plugins?: readonly ExchangePlugin[]
  /** The user's observer (a cassette recorder), after the plug-ins'. */
  readonly observer?: ExchangeObserver | undefined
  /**
   * How an exchange begins. Default `storm.begin` (synchronous). A shared state store's begin is
   * asynchronous; null when it answered the client itself (the store unreachable).
   */
  readonly begin?: (request: BeginRequest, entry: E) => Exchange | Promise<Exchange | null>
  /** Called with the observer the plug-ins made (a transport that guards it against throwing hooks). */
  readonly guard?: (observer: ExchangeObserver) => ExchangeObserver
}

/** Serve one request: resolves (or returns) once the exchange has ended. */
export type Serve<E extends ServeEntry = ServeEntry> = (request: ServeRequest, entry: E) => Promise<void> | void

/** The front door of `storm`, serving every request with the storm's plug-ins. */
export function createServe<E extends ServeEntry = ServeEntry>(storm: Storm, options: ServeOptions<E> = {}): Serve<E> {
  const plugins = options.plugins ?? storm.plugins
  // Only a transport given plug-ins of its own (deprecated) serves with other hooks than the storm's.
  const protocol = plugins === storm.plugins ? null : protocolHooksOf(plugins)
  const namers = plugins.filter((plugin) => plugin.nameRequest !== undefined)
  const wrappers = plugins.filter((plugin) => plugin.wrapTransport !== undefined)
  // The first plug-in wraps outermost: it sees every hook first.
  const made = plugins.reduceRight<ExchangeObserver | undefined>((inner, plugin) => (plugin.observe ? plugin.observe(inner, storm) : inner), options.observer)
  const observer = made && options.guard ? options.guard(made) : made
  const begin = options.begin ?? ((request: BeginRequest) => storm.begin(request))

  const run = (exchange: Exchange, entry: E): Promise<void> | void => {
    if (protocol) exchange.adaptProtocol(protocol)
    let io = entry.open(exchange)
    for (const plugin of wrappers) io = plugin.wrapTransport!(exchange, io)
    return runExchange(exchange, io, observer)
  }
  const start = (request: ServeRequest, reading: RequestReading | undefined, entry: E): Promise<void> | void => {
    const begun = begin({ method: request.method, url: request.url, headers: request.headers, reading, ...(request.run !== undefined ? { run: request.run } : {}) }, entry)
    if (!(begun instanceof Promise)) return run(begun, entry)
    return begun.then((exchange) => (exchange ? run(exchange, entry) : undefined))
  }
  return (request, entry) => {
    let naming: Naming | null = null
    for (const plugin of namers) if ((naming = plugin.nameRequest!(request, storm))) break
    if (naming === null) return start(request, undefined, entry)
    if ('reading' in naming) return start(request, naming.reading, entry)
    if ('names' in naming) return start(request, naming.names, entry)
    const { name } = naming
    return entry.readBody(naming.bodyLimit).then((read) => (read ? start(request, name(read.bytes), entry) : undefined))
  }
}
