/**
 * The engine's front door: one call per exchange, the same for every transport (the proxy,
 * intercept(), MSW handlers, the demo). It names the request (plug-ins), begins the exchange,
 * wraps the transport (plug-ins) and runs the flow with the observers (plug-ins and the user's).
 * A new transport is a sink (an `ExchangeTransport`) and one `serve()` call.
 *
 * In memory, `serve` stays synchronous for a request no plug-in reads the body of, and the flow's
 * pass-through fast path is taken when no fault and no observer want the exchange.
 */
import type { Exchange } from './exchange.js'
import { runExchange, type ExchangeObserver, type ProtocolHooks } from './exchange-flow.js'
import type { ExchangeTransport } from './exchange-transport.js'
import type { ExchangePlugin, Naming, RequestHead, RequestNames } from './plugin.js'
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
  /** In order; the first one's observer sees the exchange first. */
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

export function createServe<E extends ServeEntry = ServeEntry>(storm: Storm, options: ServeOptions<E> = {}): Serve<E> {
  const plugins = options.plugins ?? []
  const namers = plugins.filter((plugin) => plugin.nameRequest !== undefined)
  const wrappers = plugins.filter((plugin) => plugin.wrapTransport !== undefined)
  // The first plug-in wraps outermost: it sees every hook first.
  const made = plugins.reduceRight<ExchangeObserver | undefined>((inner, plugin) => (plugin.observe ? plugin.observe(inner, storm) : inner), options.observer)
  const observer = made && options.guard ? options.guard(made) : made
  const begin = options.begin ?? ((request: BeginRequest) => storm.begin(request))
  const hooks = protocolHooks(plugins)

  const run = (exchange: Exchange, entry: E): Promise<void> | void => {
    let io = entry.open(exchange)
    for (const plugin of wrappers) io = plugin.wrapTransport!(exchange, io)
    return runExchange(exchange, io, observer, hooks)
  }
  const start = (request: ServeRequest, names: RequestNames | undefined, entry: E): Promise<void> | void => {
    const begun = begin({ method: request.method, url: request.url, headers: request.headers, names, ...(request.run !== undefined ? { run: request.run } : {}) }, entry)
    if (!(begun instanceof Promise)) return run(begun, entry)
    return begun.then((exchange) => (exchange ? run(exchange, entry) : undefined))
  }
  return (request, entry) => {
    let naming: Naming | null = null
    for (const plugin of namers) if ((naming = plugin.nameRequest!(request, storm))) break
    if (naming === null) return start(request, undefined, entry)
    if ('names' in naming) return start(request, naming.names, entry)
    const { name } = naming
    return entry.readBody(naming.bodyLimit).then((read) => (read ? start(request, name(read.bytes), entry) : undefined))
  }
}

/** The plug-ins' answers to what the flow asks: the first plug-in with an answer for a request wins. */
function protocolHooks(plugins: readonly ExchangePlugin[]): ProtocolHooks {
  const shapers = plugins.flatMap((plugin) => (plugin.shapeFailure ? [plugin.shapeFailure] : []))
  const readers = plugins.flatMap((plugin) => (plugin.readAnswer ? [plugin.readAnswer] : []))
  const deltaReaders = plugins.flatMap((plugin) => (plugin.readDelta ? [plugin.readDelta] : []))
  const finalTests = plugins.flatMap((plugin) => (plugin.isFinalEvent ? [plugin.isFinalEvent] : []))
  const resultShapers = plugins.flatMap((plugin) => (plugin.shapeResult ? [plugin.shapeResult] : []))
  const editors = plugins.flatMap((plugin) => (plugin.editAnswer ? [plugin.editAnswer] : []))
  const readingOn = plugins.flatMap((plugin) => (plugin.readsOnAfterCut ? [plugin.readsOnAfterCut] : []))
  return {
    shapeFailure: shapers.length < 2 ? shapers[0] : (request, failure, options) => firstOf(shapers, (shape) => shape(request, failure, options)),
    readAnswer: readers.length < 2 ? readers[0] : (request, type, onAnswer) => firstOf(readers, (read) => read(request, type, onAnswer)),
    readDelta: deltaReaders.length < 2 ? deltaReaders[0] : (event) => firstOf(deltaReaders, (read) => read(event)),
    isFinalEvent: finalTests.length < 2 ? finalTests[0] : (event, dataHead) => finalTests.some((test) => test(event, dataHead)),
    readsOnAfterCut: readingOn.length < 2 ? readingOn[0] : (request) => readingOn.some((reads) => reads(request)),
    shapeResult: resultShapers.length < 2 ? resultShapers[0] : (request, value) => firstOf(resultShapers, (shape) => shape(request, value)),
    // null is an editor's answer here (its request, nothing to edit): the next is asked only on undefined.
    editAnswer: editors.length < 2 ? editors[0] : (request, body, edit) => editors.reduce<Uint8Array | null | undefined>((found, editor) => (found !== undefined ? found : editor(request, body, edit)), undefined),
  }
}

function firstOf<F, T>(list: readonly F[], ask: (item: F) => T | null): T | null {
  for (const item of list) {
    const found = ask(item)
    if (found !== null) return found
  }
  return null
}
