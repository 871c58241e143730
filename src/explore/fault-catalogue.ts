/**
 * The failures each kind of call can have (Filibuster's "analysis file" per client library): a
 * named fault (`rate_limit`, `stream_cut@text`) is a rule's kind and parameters, and applies to a
 * call when its kind allows it. The default table is docs/explore.md's; `--faults` picks among
 * it (or any fault kind the registry knows), and a config file replaces it or sets it per route.
 */
import { ConfigError } from '../errors.js'
import { closestName } from '../engine/closest-name.js'
import { defaultFaults } from '../default-faults.js'
import { formatIssues } from '../engine/schema/format-issues.js'
import type { CallKind } from './call-sites.js'

/** A fault as explore uses it: a name, and the rule fields (kind and its parameters) it injects. */
export interface FaultChoice {
  readonly name: string
  /** The rule's `kind` and parameters (no name, route or calls: explore sets those). */
  readonly rule: Readonly<Record<string, unknown>> & { readonly kind: string }
}

/** Which calls a fault kind can act on. A kind not listed acts on any HTTP call. */
const APPLIES: Readonly<Record<string, (kind: CallKind) => boolean>> = {
  response_lost: (kind) => kind.write,
  schema_drift: (kind) => kind.json,
  // Stream faults: an event stream; `at` needs a model stream carrying those deltas.
  stream_cut: (kind) => kind.stream,
  stream_stall: (kind) => kind.stream,
  slow_stream: (kind) => kind.stream,
  drop_terminal: (kind) => kind.stream && kind.model !== null,
  duplicate_event: (kind) => kind.model?.streamed === true,
  drop_usage: (kind) => kind.model?.streamed === true,
  overloaded: (kind) => kind.model !== null,
  token_limit: (kind) => kind.model !== null,
  tool_error: (kind) => kind.mcp?.method === 'tools/call' && kind.mcp.id,
  rpc_error: (kind) => kind.mcp !== null && kind.mcp.id,
  session_expired: (kind) => kind.mcp !== null && kind.mcp.session,
  protocol_error: (kind) => kind.mcp !== null && kind.mcp.id,
}

/** Whether `fault` can act on a call of `kind`. */
export function faultApplies(fault: FaultChoice, kind: CallKind): boolean {
  const at = fault.rule.at
  // A stream fault counting events acts past its `after`-th: a stream with no more (an MCP answer's one event) ends first.
  if ((fault.rule.kind === 'stream_cut' || fault.rule.kind === 'stream_stall') && at === undefined && kind.events <= Number(fault.rule.after ?? 0)) return false
  if (typeof at === 'string' && (fault.rule.kind === 'stream_cut' || fault.rule.kind === 'stream_stall' || fault.rule.kind === 'duplicate_event')) {
    if (!kind.model?.deltas.includes(at as 'text' | 'tool_arguments')) return false
  }
  return (APPLIES[fault.rule.kind] ?? (() => true))(kind)
}

/**
 * The default table (docs/explore.md#the-faults): every HTTP call gets the first five; writes a
 * lost response; JSON answers a schema drift; model calls the provider-shaped overload and, on
 * streams, cuts inside text and tool arguments, a stall and a missing final event; MCP calls a
 * tool error, a JSON-RPC error and an expired session. On a model call `rate_limit`,
 * `unavailable` and `overloaded` answer as the provider does (429, 500, 529/503).
 */
export const DEFAULT_FAULTS: readonly FaultChoice[] = [
  { name: 'timeout', rule: { kind: 'timeout' } },
  { name: 'rate_limit', rule: { kind: 'rate_limit', delay: 1 } },
  { name: 'unavailable', rule: { kind: 'unavailable' } },
  { name: 'reset', rule: { kind: 'reset' } },
  { name: 'latency', rule: { kind: 'latency', delay: 1 } },
  { name: 'response_lost', rule: { kind: 'response_lost' } },
  { name: 'schema_drift', rule: { kind: 'schema_drift' } },
  { name: 'overloaded', rule: { kind: 'overloaded', delay: 1 } },
  { name: 'stream_cut@text', rule: { kind: 'stream_cut', at: 'text', after: 1 } },
  { name: 'stream_cut@tool_arguments', rule: { kind: 'stream_cut', at: 'tool_arguments', after: 1 } },
  { name: 'stream_stall', rule: { kind: 'stream_stall', after: 1, delay: 5 } },
  { name: 'drop_terminal', rule: { kind: 'drop_terminal' } },
  { name: 'tool_error', rule: { kind: 'tool_error' } },
  { name: 'rpc_error', rule: { kind: 'rpc_error' } },
  { name: 'session_expired', rule: { kind: 'session_expired' } },
]

/** Fields of a fault that are explore's to set. */
const RULE_FIELDS_OF_EXPLORE = ['name', 'route', 'calls', 'probability', 'limit'] as const

/**
 * Check one fault's rule fields against the rules schema (its kind known, its parameters valid),
 * naming `where` and the field; returns the choice with its fields as written.
 */
export function checkFaultChoice(choice: FaultChoice, where: string): FaultChoice {
  if (!defaultFaults.has(choice.rule.kind)) {
    const near = closestName(choice.rule.kind, defaultFaults.kinds)
    throw new ConfigError(`Failed to read ${where}: unknown fault kind "${choice.rule.kind}".${near ? ` Did you mean "${near}"?` : ''} Use one of ${defaultFaults.kinds.map((kind) => `"${kind}"`).join(', ')}.`)
  }
  for (const field of RULE_FIELDS_OF_EXPLORE) {
    if (field in choice.rule) throw new ConfigError(`Failed to read ${where}: "${field}" is explore's to set (one rule per call site); give only "kind" and its parameters.`)
  }
  const result = defaultFaults.ruleSchema.safeParse({ name: choice.name, route: '*', calls: [1], ...choice.rule })
  if (!result.success) throw new ConfigError(`Failed to read ${where}: ${formatIssues(result.error)[0]}.`)
  return choice
}

/**
 * The faults named in `names` (`--faults timeout,response_lost`): names of the default table, or
 * any fault kind the registry knows (with its default parameters). An unknown name is an error
 * with a did-you-mean, before anything runs.
 */
export function faultsNamed(names: readonly string[], table: readonly FaultChoice[], where: string): FaultChoice[] {
  const chosen: FaultChoice[] = []
  for (const name of names) {
    const known = table.find((fault) => fault.name === name) ?? DEFAULT_FAULTS.find((fault) => fault.name === name)
    if (known) {
      if (!chosen.some((fault) => fault.name === name)) chosen.push(known)
      continue
    }
    if (defaultFaults.has(name)) {
      if (!chosen.some((fault) => fault.name === name)) chosen.push(checkFaultChoice({ name, rule: { kind: name } }, `${where} "${name}"`))
      continue
    }
    const candidates = [...new Set([...table.map((fault) => fault.name), ...DEFAULT_FAULTS.map((fault) => fault.name), ...defaultFaults.kinds])]
    const near = closestName(name, candidates)
    throw new ConfigError(`Failed to read ${where}: unknown fault "${name}".${near ? ` Did you mean "${near}"?` : ''} Use a fault of the table (${table.map((fault) => fault.name).join(', ')}) or a fault kind (docs/rules.md#faults-and-their-phases).`, { code: 'ERR_USAGE' })
  }
  return chosen
}

/** The faults of `table` that apply to a call of `kind`, in the table's order. */
export function faultsFor(kind: CallKind, table: readonly FaultChoice[]): FaultChoice[] {
  return table.filter((fault) => faultApplies(fault, kind))
}
