/**
 * What the kernel asks of the protocols it does not know, from one table: each hook a plug-in may
 * answer (`ExchangePlugin` extends `ProtocolHooks`) and how the answers of several plug-ins make
 * one. A storm gathers its plug-ins' once (`storm.protocol`) and each exchange carries them
 * (`exchange.protocol`, a fault's `context.protocol`): a new hook is a line here and the place that asks it.
 *
 * @example
 * const protocol = protocolHooksOf([modelCallsPlugin(), mcpPlugin()])
 * protocol.shapeFailure?.(request, 'rate_limit', { retryAfter: 1, identity: [] }) // a provider's 429, or null
 */
import type { AnswerEditor, FailureShaper, ResultShaper } from './faults/failure-shape.js'
import type { RequestView } from './http.js'
import type { DeltaReader } from './streams/deltas.js'
import type { FinalEventTest } from './streams/sse-splitter.js'

/**
 * A reader of the message that answers `request` in its event stream (`contentType`): it calls
 * `onAnswer` once that message went by. Null: the request expects no such answer (then the
 * stream's final event ends it).
 */
export type AnswerReader = (request: RequestView, contentType: string, onAnswer: () => void) => ((chunk: Buffer) => void) | null

/**
 * A plug-in's judgement of a rule's route that reads as one of the route names it gives (MCP:
 * `tools/call create_*`): null when it can match one, else why not; undefined when it does not
 * read as its own.
 */
export type RouteChecker = (route: string) => string | null | undefined

export interface ProtocolHooks {
  /** A status fault's answer in the service's own shape (model providers' 429 and 529); null: the generic answer. */
  readonly shapeFailure?: FailureShaper | undefined
  /** A `replace` answer in the service's own shape (MCP: a tool result with the request's id); null: plain JSON. */
  readonly shapeResult?: ResultShaper | undefined
  /** Where an answer's payload is, for `schema_drift` (MCP: a tool's structuredContent); undefined: the whole body. */
  readonly editAnswer?: AnswerEditor | undefined
  /** The reader of the message that ends a request's event stream (MCP: the answer to its id). */
  readonly readAnswer?: AnswerReader | undefined
  /** What delta a model stream's event carries (`at: text | tool_arguments`). */
  readonly readDelta?: DeltaReader | undefined
  /** Whether an SSE event ends its stream (`[DONE]`, `message_stop`): `drop_terminal` drops it; a client leaving after it got the whole answer. */
  readonly isFinalEvent?: FinalEventTest | undefined
  /** Whether a stream a fault cut is read on to its end (bounded) for what it sends last (model calls: the usage). */
  readonly readsOnAfterCut?: ((request: RequestView) => boolean) | undefined
  /** Whether a rule's route that reads as one of its route names can match one (`lintRules`, the CONNECT scope). */
  readonly checkRoute?: RouteChecker | undefined
}

/**
 * How the answers of several plug-ins to one hook make one: the first that is not null (a plug-in
 * that does not know the request answers null), the first that is not undefined (null is an answer
 * there: its request, nothing to do), or yes when any says yes.
 */
type Combine = 'first' | 'known' | 'any'

const HOOKS: { readonly [K in keyof Required<ProtocolHooks>]: Combine } = {
  shapeFailure: 'first',
  shapeResult: 'first',
  editAnswer: 'known',
  readAnswer: 'first',
  readDelta: 'first',
  isFinalEvent: 'any',
  readsOnAfterCut: 'any',
  checkRoute: 'known',
}

type Hook = (...args: never[]) => unknown

/** The hooks of `plugins` as one: a hook only one plug-in answers is that plug-in's own function (no indirection on the hot path). */
export function protocolHooksOf(plugins: readonly ProtocolHooks[]): ProtocolHooks {
  const hooks: Partial<Record<keyof ProtocolHooks, Hook>> = {}
  for (const name of Object.keys(HOOKS) as Array<keyof ProtocolHooks>) {
    const answering = plugins.flatMap((plugin) => (plugin[name] ? [plugin[name] as Hook] : []))
    if (answering.length > 0) hooks[name] = answering.length === 1 ? answering[0] : combined(HOOKS[name], answering as Array<(...args: unknown[]) => unknown>)
  }
  return hooks as ProtocolHooks
}

function combined(how: Combine, hooks: ReadonlyArray<(...args: unknown[]) => unknown>): Hook {
  if (how === 'any') return (...args: unknown[]) => hooks.some((hook) => hook(...args))
  const none = how === 'first' ? null : undefined
  return (...args: unknown[]) => {
    for (const hook of hooks) {
      const answer = hook(...args)
      if (answer !== none) return answer
    }
    return none
  }
}
