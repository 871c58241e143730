/**
 * toolstorm: break the HTTP calls of AI agents, then check what was really committed.
 *
 * The root is for test authors: storms, rules, clocks, reports, contracts, redaction and errors.
 * In-process transports are in `toolstorm/interceptors` and `toolstorm/vitest`, the proxy in
 * `toolstorm/proxy`, cassettes in `toolstorm/cassette`, and what extension authors build on (faults,
 * plug-ins, sources and sinks, streams, evidence channels) in `toolstorm/extend` (docs/api.md).
 * @see ../README.md
 */

/* Storm and configuration */
// Storms are made with createStorm (which validates the config); the class is a type only.
export { DEFAULT_RUN } from './engine/storm.js'
export { createStorm } from './create-storm.js'
export type { StormOptions } from './create-storm.js'
export { HEADER_CALL, HEADER_KEY, HEADER_RUN } from './engine/http.js'
export type { Storm } from './engine/storm.js'
export { configSchema, ruleSchema, reportSchema } from './default-faults.js'
export type { StormConfig, StormConfigInput } from './engine/schema/config.js'
export type { Rule, RuleInput } from './engine/schema/rule.js'
export { formatRuleWarning, lintRules } from './lint/lint-rules.js'
export type { RuleWarning } from './lint/lint-rules.js'
export type { FaultKind } from './default-faults.js'

/* Clocks */
export { RealClock, VirtualClock } from './engine/clock.js'
export type { Clock } from './engine/clock.js'

/* Evidence, reports, contracts */
export { REPORT_KIND } from './engine/schema/report.js'
export type { Report, CallRecord, EffectRecord, CoverageCounts, ModelCall, McpCall } from './engine/schema/report.js'
export type { McpRequest, JsonRpcId } from './mcp/mcp-request.js'
export type { McpOptions } from './engine/schema/mcp-section.js'
export { validateReport } from './report/validate-report.js'
export { Contract, contract } from './contracts/contract.js'
export type { ContractResult } from './contracts/contract.js'
export type { Check } from './engine/contracts/check.js'
export type { TokenKind } from './model-calls/contracts/at-most-tokens.js'

/* Redaction */
export { createRedactor, defaultRedactor, REDACTED, RedactionCollisionError } from './redact/index.js'
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
  ClaimError,
  CertificateAuthorityError,
  StateError,
  StateUnavailableError,
  MissingPeerError,
  PortInUseError,
  ERROR_CODES,
} from './errors.js'
export type { ErrorCode } from './errors.js'

/* Files */
export { loadConfigFile } from './io/load-config-file.js'

export { VERSION } from './version.js'

/* Deprecated: extension points moved to `toolstorm/extend` (CHANGELOG.md, Unreleased). Kept working until 1.0. */
export {
  /** @deprecated Import from `toolstorm/extend`. */
  FAULT_KINDS,
  /** @deprecated Import from `toolstorm/extend`. */
  faultFor,
  /** @deprecated Import from `toolstorm/extend`. */
  channels,
} from './extend/index.js'
export type {
  /** @deprecated Import from `toolstorm/extend`. */
  Fault,
  /** @deprecated Import from `toolstorm/extend`. */
  FaultPhase,
  /** @deprecated Import from `toolstorm/extend`. */
  FaultContext,
  /** @deprecated Import from `toolstorm/extend`. */
  FaultAction,
  /** @deprecated Import from `toolstorm/extend`. */
  FaultOutcome,
  /** @deprecated Import from `toolstorm/extend`. */
  UpstreamSource,
  /** @deprecated Import from `toolstorm/extend`. */
  SourceRequest,
  /** @deprecated Import from `toolstorm/extend`. */
  UpstreamTarget,
  /** @deprecated Import from `toolstorm/extend`. */
  UpstreamExchange,
  /** @deprecated Import from `toolstorm/extend`. */
  UpstreamResponse,
  /** @deprecated Import from `toolstorm/extend`. */
  SourceAction,
  /** @deprecated Import from `toolstorm/extend`. */
  ForwardOptions,
  /** @deprecated Import from `toolstorm/extend`. */
  StreamTransform,
  /** @deprecated Import from `toolstorm/extend`. */
  StreamStep,
  /** @deprecated Import from `toolstorm/extend`. */
  StreamNext,
  /** @deprecated Import from `toolstorm/extend`. */
  StreamPiece,
  /** @deprecated Import from `toolstorm/extend`. */
  ResponseWriter,
  /** @deprecated Import from `toolstorm/extend`. */
  ExchangeEvent,
  /** @deprecated Import from `toolstorm/extend`. */
  EffectEvent,
  /** @deprecated Import from `toolstorm/extend`. */
  RunEvent,
} from './extend/index.js'
/** @deprecated An internal of the storm; no public API takes it. Kept until 1.0. */
export type { BeginRequest } from './engine/storm.js'
