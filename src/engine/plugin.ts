/**
 * What a plug-in adds to every exchange a transport serves (engine/serve.ts): a name for the
 * request before it begins (MCP: the JSON-RPC message in its body), an observer of its bytes
 * (model calls, MCP evidence), a wrapper around its transport (the legacy MCP SSE transport), and
 * what the kernel asks of a protocol it does not know: a service's own failure answers (model
 * providers' errors) and the message that ends a request's stream (an MCP answer).
 * Every hook is optional and asked of every request, so each must cost the requests it does not
 * concern one comparison or so: the proxy's fast path depends on it. A storm is made with its
 * plug-ins (`createStorm(config, { plugins })`), and every transport serves it with them.
 *
 * @example
 * const plugin: ExchangePlugin = { name: 'stamp', observe: (inner) => combineObservers({ onStart: (e) => console.log(e.id) }, inner) }
 * const storm = createStorm(config, { plugins: [...defaultPlugins(), plugin] })
 */
import type { Exchange } from './exchange.js'
import type { ExchangeObserver } from './exchange-flow.js'
import type { ExchangeTransport } from './exchange-transport.js'
import type { HeaderMap } from './http.js'
import type { ProtocolHooks } from './protocol-hooks.js'
import type { RequestReading } from './request-reading.js'
import type { StormConfig } from './schema/config.js'
import type { Redactor } from '../redact/index.js'
import type { Fault } from './faults/fault.js'

/** A request as it arrived, before its exchange begins. */
export interface RequestHead {
  readonly method: string
  /** The absolute URL the client asked for. */
  readonly url: URL
  readonly headers: HeaderMap
  /** Whether a body follows the head. */
  readonly hasBody: boolean
}

/** What a plug-in reads of the storm it serves: its config (MCP's `mcp` section) and redactor. The storm itself, so a plug-in may key state on it. */
export interface StormView {
  readonly config: StormConfig
  readonly redactor: Redactor
}

/**
 * A plug-in's reading of one request: from its head alone (`reading`), or from the first
 * `bodyLimit` bytes of its body (`name`, given null when the body is longer). The transport reads
 * that much before the exchange begins and forwards the same bytes afterwards.
 */
export type Naming =
  | { readonly reading: RequestReading }
  /** @deprecated Renamed `{ reading }`. */
  | { readonly names: RequestReading }
  | { readonly bodyLimit: number; name(body: Uint8Array | null): RequestReading }

/** A plug-in: the hooks below, and the answers to what the kernel asks of a protocol it does not know (`ProtocolHooks`, protocol-hooks.ts). */
export interface ExchangePlugin extends ProtocolHooks {
  /** For messages and the docs (`mcp`, `model-calls`). */
  readonly name: string
  /** Names `head` (null: not this plug-in's request). The first plug-in that names a request wins. */
  nameRequest?(head: RequestHead, storm: StormView): Naming | null
  /**
   * The observer with this plug-in's added to `inner` (the user's and the later plug-ins'), asked
   * once per transport. Wrapping rather than combining lets a plug-in keep other exchanges cheap.
   */
  observe?(inner: ExchangeObserver | undefined, storm: StormView): ExchangeObserver | undefined
  /** `io`, or a transport around it for `exchange` (called once the exchange began, its fault chosen). */
  wrapTransport?(exchange: Exchange, io: ExchangeTransport): ExchangeTransport
  /**
   * The fault kinds this plug-in brings (MCP's `tool_error`, model providers' `token_limit`…), on top
   * of the kernel's: a storm made with the plug-in (`createStorm(config, { plugins })`) lets its rules use them.
   */
  readonly faults?: readonly Fault<string, never>[]
}
