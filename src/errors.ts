/**
 * Every error toolstorm raises on purpose, with a stable `code`.
 *
 * Injected faults are never errors of this kind: they are effects the transport carries out.
 * One table maps each code to its CLI exit code and its admin-API HTTP status.
 * @see docs/errors.md for the list users read.
 */

export const ERROR_CODES = {
  ERR_USAGE: { exit: 2, status: 400, summary: 'The command line is not valid.' },
  ERR_CONFIG_INVALID: { exit: 2, status: 400, summary: 'A rules file, rule or option does not match its schema.' },
  ERR_FILE_UNREADABLE: { exit: 2, status: 400, summary: 'A file could not be read (missing, a directory, or no permission).' },
  ERR_FILE_UNWRITABLE: { exit: 2, status: 500, summary: 'A file could not be written (no permission, no space, or a directory in the way).' },
  ERR_JSON_INVALID: { exit: 2, status: 400, summary: 'A file is not valid UTF-8 JSON/YAML, or is nested too deeply.' },
  ERR_INPUT_TOO_LARGE: { exit: 2, status: 413, summary: 'A file or document exceeds its size limit.' },
  ERR_REPORT_INVALID: { exit: 2, status: 400, summary: 'A report or comparison does not match the report schema or is inconsistent.' },
  ERR_CASSETTE_INVALID: { exit: 2, status: 400, summary: 'A cassette does not match the cassette schema or is inconsistent.' },
  ERR_CASSETTE_MISMATCH: { exit: 1, status: 422, summary: 'Strict replay received a request that differs from the recorded one.' },
  ERR_CASSETTE_EXTRA: { exit: 1, status: 422, summary: 'Strict replay received more requests than were recorded.' },
  ERR_CASSETTE_UNUSED: { exit: 1, status: 422, summary: 'Strict replay ended with recorded exchanges that were never requested.' },
  ERR_CASSETTE_TRUNCATED: { exit: 1, status: 409, summary: 'Replay served responses whose bodies were cut at the body limit when recorded (they break off); --allow-truncated accepts them.' },
  ERR_CASSETTE_BODY_FILE: { exit: 2, status: 400, summary: 'A body file beside a cassette is missing or does not hold the recorded bytes.' },
  ERR_CASSETTE_EXISTS: { exit: 2, status: 409, summary: 'A recording would have to replace a file it did not write (not a cassette, or one recorded with other matching options); --overwrite replaces it.' },
  ERR_CONTRACT_FAILED: { exit: 1, status: 409, summary: 'A contract check failed.' },
  ERR_CONTRACT_EMPTY: { exit: 1, status: 409, summary: 'A contract with no checks cannot establish correctness.' },
  ERR_EFFECT_INVALID: { exit: 2, status: 400, summary: 'An effect report is malformed or refers to no known exchange.' },
  ERR_EFFECT_LIMIT: { exit: 2, status: 429, summary: 'The effect trace limit (10,000 per run) was reached.' },
  ERR_CLAIM_INVALID: { exit: 2, status: 400, summary: 'A claim (`POST /claims`, `reportClaim()`) is malformed.' },
  ERR_CLAIM_LIMIT: { exit: 2, status: 429, summary: 'The claim limit (10,000 per run) was reached.' },
  ERR_OTLP_INVALID: { exit: 2, status: 400, summary: 'An OTLP trace export (`POST /v1/traces`) is not a valid protobuf or JSON ExportTraceServiceRequest, or has another content type.' },
  ERR_UPSTREAM_UNREACHABLE: { exit: 2, status: 502, summary: 'The upstream could not be reached or failed before answering.' },
  ERR_HOST_NOT_ALLOWED: { exit: 2, status: 403, summary: 'A request addressed to the data plane named another site in its Host header (a DNS-rebinding page does): it was not forwarded; --allow-host allows more names.' },
  ERR_REQUEST_UNROUTABLE: { exit: 2, status: 400, summary: 'The data plane could not route a request (malformed Host or target, the wrong form for the mode, no mounted target, or a request that would loop back to toolstorm).' },
  ERR_INTERCEPT_AMBIGUOUS: { exit: 2, status: 421, summary: 'In-process interceptions of separate async tasks (test.concurrent) were active and a request was made outside all of them: no storm owns it.' },
  ERR_REQUEST_MALFORMED: { exit: 2, status: 400, summary: 'The data plane could not read a request: the HTTP parser refused its head, it had no Host, an Expect other than 100-continue, or it took too long (400, 417, 431, 408).' },
  ERR_CA_INVALID: { exit: 2, status: 500, summary: 'The local certificate authority folder is incomplete, damaged, expired or unsafe.' },
  ERR_ADMIN_UNAUTHORIZED: { exit: 2, status: 401, summary: 'An admin request carried no valid bearer token.' },
  ERR_ADMIN_FORBIDDEN: { exit: 2, status: 403, summary: 'An admin request came with a Host or Origin that is not allowed.' },
  ERR_RUN_EVICTED: { exit: 2, status: 410, summary: 'A run was evicted: the proxy keeps the last --max-runs runs (1,000 by default), and its report is gone.' },
  ERR_ADMIN_NOT_FOUND: { exit: 2, status: 404, summary: 'No such admin endpoint or run.' },
  ERR_ADMIN_QUERY_INVALID: { exit: 2, status: 400, summary: 'An admin request has a query parameter its endpoint does not take.' },
  ERR_STATE: { exit: 2, status: 409, summary: 'An API was used in the wrong lifecycle state.' },
  ERR_STATE_UNAVAILABLE: { exit: 2, status: 503, summary: 'The shared state store (Redis, `--state`) could not be reached: at start the proxy exits; during traffic an exchange is answered 503 (or passed through with --state-unavailable=pass).' },
  ERR_STATE_LOCKED: { exit: 2, status: 409, summary: 'Another `toolstorm mcp` holds the run of this server in its `--state-dir`, and did not give it up in time.' },
  ERR_PEER_MISSING: { exit: 2, status: 500, summary: 'An optional peer dependency (msw) that this API needs is not installed.' },
  ERR_EXCHANGE_FAILED: { exit: 3, status: 500, summary: 'An exception escaped while the proxy served one exchange (a hook that threw, or a bug); that exchange failed, the proxy went on.' },
  ERR_PORT_IN_USE: { exit: 2, status: 500, summary: 'A server could not listen: another process holds its port.' },
  ERR_EXPLORE_BASELINE: { exit: 2, status: 409, summary: '`toolstorm explore`: the command failed, hung or broke a contract with no fault injected, so no fault can be blamed.' },
  ERR_EXPLORE_NO_TRAFFIC: { exit: 2, status: 409, summary: '`toolstorm explore`: the command sent nothing through the proxy, so there was nothing to break.' },
  ERR_EXPLORE_NOTHING_TO_TRY: { exit: 2, status: 409, summary: '`toolstorm explore`: no fault of the table applies to a call the baseline made on the routes left in (`--route`, `--faults`, the config), so nothing would be tested.' },
  ERR_EXPLORE_UNKNOWN_VARIATION: { exit: 2, status: 404, summary: '`toolstorm explore --only`: no variation of that id in this agent\'s fault space.' },
  ERR_COMMAND_NOT_FOUND: { exit: 127, status: 500, summary: 'The command to run could not be started (not found, not executable).' },
  ERR_INTERNAL: { exit: 3, status: 500, summary: 'A bug in toolstorm. Please report it.' },
} as const satisfies Record<string, { exit: number; status: number; summary: string }>

export type ErrorCode = keyof typeof ERROR_CODES

const kToolstormError = Symbol.for('toolstorm.error')

/** Base of every error toolstorm raises on purpose. */
export class ToolstormError extends Error {
  readonly code: ErrorCode
  /** Extra, already-redacted detail that callers may print (a field path, a table). */
  readonly details?: string

  constructor(code: ErrorCode, message: string, options?: { cause?: unknown; details?: string }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause })
    this.code = code
    if (options?.details !== undefined) this.details = options.details
  }

  override get name(): string {
    return this.constructor.name
  }

  get exitCode(): number {
    return ERROR_CODES[this.code].exit
  }

  get httpStatus(): number {
    return ERROR_CODES[this.code].status
  }

  /** Stays true across duplicate copies of the package (as undici does with its errors). */
  static override [Symbol.hasInstance](value: unknown): boolean {
    // Subclasses keep the ordinary prototype check; only the base class matches by brand.
    if (this !== ToolstormError) return Function.prototype[Symbol.hasInstance].call(this, value)
    return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[kToolstormError] === true
  }

  get [kToolstormError](): boolean {
    return true
  }
}

/** A rules file, rule, option or other configuration does not match its schema. */
export class ConfigError extends ToolstormError {
  constructor(message: string, options?: { cause?: unknown; details?: string; code?: ErrorCode }) {
    super(options?.code ?? 'ERR_CONFIG_INVALID', message, options)
  }
}

/** A report, comparison or evidence file is invalid. */
export class ReportError extends ToolstormError {
  constructor(message: string, options?: { cause?: unknown; details?: string; code?: ErrorCode }) {
    super(options?.code ?? 'ERR_REPORT_INVALID', message, options)
  }
}

/** A contract failed; `details` lists every failing check. */
export class ContractFailedError extends ToolstormError {
  constructor(message: string, options?: { details?: string; code?: ErrorCode }) {
    super(options?.code ?? 'ERR_CONTRACT_FAILED', message, options)
  }
}

/** A cassette is invalid, or strict replay diverged from it. */
export class CassetteError extends ToolstormError {}

/** Strict replay received a request that differs from the recorded one, or one too many (`details`: the table). */
export class CassetteMismatchError extends CassetteError {
  constructor(code: 'ERR_CASSETTE_MISMATCH' | 'ERR_CASSETTE_EXTRA', message: string, options?: { details?: string }) {
    super(code, message, options)
  }
}

/** Strict replay ended with recorded exchanges that were never requested (`details`: the table). */
export class CassetteUnusedError extends CassetteError {
  constructor(message: string, options?: { details?: string }) {
    super('ERR_CASSETTE_UNUSED', message, options)
  }
}

/** Replay served responses whose bodies were cut at the body limit when recorded (`details`: the table). */
export class CassetteTruncatedError extends CassetteError {
  constructor(message: string, options?: { details?: string }) {
    super('ERR_CASSETTE_TRUNCATED', message, options)
  }
}

/** An effect report was refused. */
export class EffectError extends ToolstormError {}

/** A claim or an OTLP trace export was refused (`ERR_CLAIM_INVALID`, `ERR_CLAIM_LIMIT`, `ERR_OTLP_INVALID`). */
export class ClaimError extends ToolstormError {}

/** The upstream could not be reached. */
export class UpstreamError extends ToolstormError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('ERR_UPSTREAM_UNREACHABLE', message, options)
  }
}

/** The local certificate authority (HTTPS interception) cannot be created or used. */
export class CertificateAuthorityError extends ToolstormError {
  constructor(message: string, options?: { cause?: unknown; code?: ErrorCode }) {
    super(options?.code ?? 'ERR_CA_INVALID', message, options)
  }
}

/** The admin API refused a request. */
export class AdminApiError extends ToolstormError {}

/** An API was used in the wrong lifecycle state (for example `effect()` outside an exchange). */
export class StateError extends ToolstormError {
  constructor(message: string) {
    super('ERR_STATE', message)
  }
}

/** The shared state store (Redis) cannot be reached; the message names it (without its password). */
export class StateUnavailableError extends ToolstormError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('ERR_STATE_UNAVAILABLE', message, options)
  }
}

/** An API needs an optional peer dependency (msw) that the project does not have. */
export class MissingPeerError extends ToolstormError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('ERR_PEER_MISSING', message, options)
  }
}

/** Which of a process's servers could not listen, and which option chose its port. */
export interface PortInUse {
  readonly host: string
  readonly port: number
  /** The data plane (proxy, replay server, lab) or the admin API. */
  readonly server: 'data' | 'admin'
  /** What failed to start, when more precise than "the server" (the data plane) or "the admin API". */
  readonly name?: string
  /** The option to change, as the caller knows it (`--admin-port` on the command line). Default: the `startProxy()` option. */
  readonly option?: string
}

function serverName(where: PortInUse): string {
  return where.name ?? (where.server === 'admin' ? 'the admin API' : 'the server')
}

/** A server could not listen because its port is taken: an ordinary mistake, not a bug (exit 2). */
export class PortInUseError extends ToolstormError {
  readonly host: string
  readonly port: number
  readonly server: 'data' | 'admin'
  readonly #where: PortInUse

  constructor(where: PortInUse, options?: { cause?: unknown }) {
    const option = where.option ?? (where.server === 'admin' ? 'adminPort' : 'port')
    super('ERR_PORT_IN_USE', `Failed to start ${serverName(where)}: port ${where.port} on ${where.host} is in use. Pass another ${option}, or ${option} 0 for any free one.`, options)
    this.host = where.host
    this.port = where.port
    this.server = where.server
    this.#where = where
  }

  /** The same error, naming the option the way the caller spells it. */
  withOption(option: string): PortInUseError {
    return new PortInUseError({ ...this.#where, option }, { cause: this.cause })
  }
}

/**
 * Node's listen errors that are ordinary mistakes as typed errors (exit 2, not "a bug"): a port
 * in use, a privileged port, a host that is not this machine's. Anything else unchanged.
 */
export function listenError(error: unknown, where: PortInUse): unknown {
  const code = (error as NodeJS.ErrnoException | null)?.code
  if (code === 'EADDRINUSE') return new PortInUseError(where, { cause: error })
  const what = serverName(where)
  if (code === 'EACCES') return new ConfigError(`Failed to start ${what}: port ${where.port} on ${where.host} needs privileges (EACCES). Use a port above 1023, or 0 for any free one.`, { code: 'ERR_USAGE', cause: error })
  if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND' || code === 'EAI_AGAIN') {
    return new ConfigError(`Failed to start ${what}: cannot listen on "${where.host}" (${code}): it is not an address of this machine. Listen on 127.0.0.1 (the default), or on an address this machine has.`, { code: 'ERR_USAGE', cause: error })
  }
  return error
}

/** Prefix for every message toolstorm prints. */
export const MESSAGE_PREFIX = '[toolstorm]'
