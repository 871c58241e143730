/**
 * `toolstorm/extend`: what extension authors build on. A new fault kind, a plug-in every exchange
 * goes through (naming, observing, wrapping the transport), a new transport (a sink plus one call
 * to `createServe()`), a source answers come from, and the evidence channels.
 * Test authors need none of this: `toolstorm` is theirs.
 * @see ../../docs/api.md
 */

/* Faults: one kind a file, each with `explain()` (engine/faults/) */
export { FAULT_KINDS, faultFor, faultRegistryOf } from '../default-faults.js'
export type { FaultKind } from '../default-faults.js'
export { FaultRegistry } from '../engine/faults/fault-registry.js'
export { KERNEL_FAULTS } from '../engine/faults/kernel-faults.js'
export { defineFault } from '../engine/faults/fault.js'
export type { Fault, FaultPhase, FaultContext, FaultAction, FaultOutcome } from '../engine/faults/fault.js'

/* Plug-ins and the front door every transport calls (engine/plugin.ts, engine/serve.ts) */
export type { ExchangePlugin, RequestHead, Naming, StormView } from '../engine/plugin.js'
export type { ProtocolHooks, RouteChecker, AnswerReader } from '../engine/protocol-hooks.js'
export type { RequestReading } from '../engine/request-reading.js'
import type { RequestReading } from '../engine/request-reading.js'
/** @deprecated Renamed `RequestReading`: it holds a route name and four other things. */
export type RequestNames = RequestReading
export type { RequestDetails } from '../engine/http.js'
export type { CallEvidence } from '../engine/request-reading.js'
export { defaultPlugins } from '../default-plugins.js'
export type { DefaultPluginOptions } from '../default-plugins.js'
export { createServe } from '../engine/serve.js'
export type { Serve, ServeEntry, ServeOptions, ServeRequest } from '../engine/serve.js'
export type { ExchangeObserver } from '../engine/exchange-flow.js'
export type { Exchange, ExchangeOutcome } from '../engine/exchange.js'

/* Sources and sinks (docs/architecture.md): where answers come from, and what a transport gives the flow */
export type { UpstreamSource, SourceRequest, UpstreamTarget } from '../engine/upstream-source.js'
export type { UpstreamExchange, UpstreamResponse, SourceAction, ForwardOptions, ClientSink, ExchangeTransport, PassThroughHooks } from '../engine/exchange-transport.js'

/* Streams (what a stream fault's action carries; see docs/streams.md) */
export type { StreamTransform, StreamStep, StreamNext, StreamPiece } from '../engine/streams/stream-transform.js'
export type { ResponseWriter } from '../engine/streams/response-writer.js'

/* Evidence channels (node:diagnostics_channel) */
export { channels } from '../engine/evidence/channels.js'
export type { ExchangeEvent, EffectEvent, RunEvent } from '../engine/evidence/channels.js'
