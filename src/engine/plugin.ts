/**
 * What a plug-in adds to every exchange a transport serves (engine/serve.ts): a name for the
 * request before it begins (MCP: the JSON-RPC message in its body), an observer of its bytes
 * (model calls, MCP evidence), a wrapper around its transport (the legacy MCP SSE transport), and
 * what the kernel asks of a protocol it does not know: a service's own failure answers (model
 * providers' errors) and the message that ends a request's stream (an MCP answer).
 * Every hook is optional and asked of every request, so each must cost the requests it does not
 * concern one comparison or so: the proxy's fast path depends on it.
 *
 * @example
 * const plugin: ExchangePlugin = { name: 'stamp', observe: (inner) => combineObservers({ onStart: (e) => console.log(e.id) }, inner) }
 * startProxy({ plugins: [...defaultPlugins(), plugin] })
 */
import type { Exchange } from './exchange.js'
import type { ExchangeObserver } from './exchange-flow.js'
import type { ExchangeTransport } from './exchange-transport.js'
import type { AnswerEditor, FailureShaper, ResultShaper } from './faults/failure-shape.js'
import type { HeaderMap, RequestView } from './http.js'
import type { RequestNames } from './request-names.js'
import type { Storm } from './storm.js'
import type { AnswerReader } from './streams/stream-end.js'
import type { DeltaReader } from './streams/deltas.js'
import type { FinalEventTest } from './streams/sse-splitter.js'
import type { Fault } from './faults/fault.js'

/**
 * A plug-in's judgement of a rule's route that reads as one of the route names it gives (MCP:
 * `tools/call create_*`): null when it can match one, else why not; undefined when it does not
 * read as its own.
 */
export type RouteChecker = (route: string) => string | null | undefined

/** A request as it arrived, before its exchange begins. */
export interface RequestHead {
  readonly method: string
  /** The absolute URL the client asked for. */
  readonly url: URL
  readonly headers: HeaderMap
  /** Whether a body follows the head. */
  readonly hasBody: boolean
}

export type { RequestNames } from './request-names.js'

/**
 * A plug-in's naming of one request: from its head alone (`names`), or from the first `bodyLimit`
 * bytes of its body (`name`, given null when the body is longer). The transport reads that much
 * before the exchange begins and forwards the same bytes afterwards.
 */
export type Naming = { readonly names: RequestNames } | { readonly bodyLimit: number; name(body: Uint8Array | null): RequestNames }

export interface ExchangePlugin {
  /** For messages and the docs (`mcp`, `model-calls`). */
  readonly name: string
  /** Names `head` (null: not this plug-in's request). The first plug-in that names a request wins. */
  nameRequest?(head: RequestHead, storm: Storm): Naming | null
  /**
   * The observer with this plug-in's added to `inner` (the user's and the later plug-ins'), asked
   * once per transport. Wrapping rather than combining lets a plug-in keep other exchanges cheap.
   */
  observe?(inner: ExchangeObserver | undefined, storm: Storm): ExchangeObserver | undefined
  /** `io`, or a transport around it for `exchange` (called once the exchange began, its fault chosen). */
  wrapTransport?(exchange: Exchange, io: ExchangeTransport): ExchangeTransport
  /** A status fault's answer in the service's own shape; the first plug-in that knows the request wins. */
  shapeFailure?: FailureShaper
  /** The reader of a request's own answer in its event stream; the first plug-in that reads it wins. */
  readAnswer?: AnswerReader
  /** A `replace` answer in the service's own shape (MCP: a tool result); the first plug-in that knows the request wins. */
  shapeResult?: ResultShaper
  /** Where an answer's payload is, for `schema_drift` (MCP: a tool's structuredContent); the first plug-in that knows the request wins. */
  editAnswer?: AnswerEditor
  /** The reader of a model stream's deltas (`at: text | tool_arguments`); the first plug-in that reads one wins. */
  readDelta?: DeltaReader
  /** Whether an SSE event ends its stream (`drop_terminal`, a client leaving after it); yes when any plug-in says so. */
  isFinalEvent?: FinalEventTest
  /** Whether a stream a fault cut is read on to its end (model calls: for the usage the provider sends last); yes when any plug-in says so. */
  readsOnAfterCut?: (request: RequestView) => boolean
  /**
   * The fault kinds this plug-in brings (MCP's `tool_error`, model providers' `token_limit`…), on top
   * of the kernel's. A storm's rules may use them once its registry holds them: `src/default-faults.ts`.
   */
  readonly faults?: readonly Fault<string, never>[]
  /** Whether a rule's route that reads as one of this plug-in's route names can match one (`lint`, `toolstorm rules`). */
  readonly checkRoute?: RouteChecker
}
