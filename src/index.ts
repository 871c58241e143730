/**
 * toolstorm: break the HTTP calls of AI agents, then check what was really committed.
 * @see ../README.md
 */

/* Storm and configuration */
// Storms are made with createStorm (which validates the config); the class is a type only.
export { createStorm, DEFAULT_RUN } from './engine/storm.js'
export { HEADER_CALL, HEADER_KEY, HEADER_RUN } from './engine/http.js'
export type { Storm, StormOptions, BeginRequest } from './engine/storm.js'
export { configSchema } from './engine/schema/config.js'
export type { StormConfig, StormConfigInput } from './engine/schema/config.js'
export { ruleSchema } from './engine/schema/rule.js'
export type { Rule, RuleInput } from './engine/schema/rule.js'
export { lintRules, formatRuleWarning } from './engine/rules/lint-rules.js'
export type { RuleWarning } from './engine/rules/lint-rules.js'
export { FAULT_KINDS, faultFor } from './engine/faults/registry.js'
export type { FaultKind } from './engine/faults/registry.js'
export type { Fault, FaultPhase, FaultContext, FaultAction, FaultOutcome } from './engine/faults/fault.js'

/* Sources and sinks (docs/architecture.md): what `startProxy({ source })` and `intercept(storm, { source })` take */
export type { UpstreamSource, SourceRequest, UpstreamTarget } from './engine/upstream-source.js'
export type { UpstreamExchange, UpstreamResponse, SourceAction, ForwardOptions } from './engine/exchange-transport.js'

/* Streams (what a stream fault's action carries; see docs/streams.md) */
export type { StreamTransform, StreamStep, StreamNext, StreamPiece } from './engine/streams/stream-transform.js'
export type { ResponseWriter } from './engine/streams/response-writer.js'

/* Clocks */
export { RealClock, VirtualClock } from './engine/clock.js'
export type { Clock } from './engine/clock.js'

/* Evidence, reports, contracts */
export { reportSchema, REPORT_KIND } from './engine/schema/report.js'
export type { Report, CallRecord, EffectRecord, CoverageCounts, ModelCall, McpCall } from './engine/schema/report.js'
export type { McpRequest, JsonRpcId } from './engine/json-rpc/mcp-request.js'
export type { McpOptions } from './engine/schema/mcp-section.js'
export { validateReport } from './report/validate-report.js'
export { Contract, contract } from './engine/contracts/contract.js'
export type { ContractResult } from './engine/contracts/contract.js'
export type { Check } from './engine/contracts/check.js'
export type { TokenKind } from './engine/contracts/at-most-tokens.js'
export { channels } from './engine/evidence/channels.js'
export type { ExchangeEvent, EffectEvent, RunEvent } from './engine/evidence/channels.js'

/* Redaction */
export { createRedactor, defaultRedactor, REDACTED } from './redact/index.js'
export type { Redactor, RedactorOptions } from './redact/index.js'

/* Errors */
export {
  ToolstormError,
  ConfigError,
  ReportError,
  ContractFailedError,
  CassetteError,
  CassetteMismatchError,
  CassetteUnusedError,
  CassetteTruncatedError,
  EffectError,
  UpstreamError,
  AdminApiError,
  StateError,
  MissingPeerError,
  PortInUseError,
  ERROR_CODES,
} from './errors.js'
export type { ErrorCode } from './errors.js'

/* Files */
export { loadConfigFile } from './io/load-config-file.js'

export { VERSION } from './version.js'
