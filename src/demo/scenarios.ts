/**
 * The shipping lab's scenarios, with ToolStorm's rule names and its tool names as route names,
 * so schedules are the reference's. The first six are the reference's; the last two exercise the
 * control plane: an observability endpoint the agent reports to, and an approval service it asks
 * before it ships (docs/lab.md).
 */
import type { RuleInput } from '../engine/schema/rule.js'

export const ROUTES = {
  check_inventory: 'GET /inventory/:sku',
  create_shipment: 'POST /shipments',
  request_approval: 'POST /approvals',
  report_event: 'POST /events',
} as const

/**
 * The control-plane steps a scenario's agent takes: `approval` asks the approval service before
 * it ships, `telemetry` reports the task's end to the observability endpoint. With either, the
 * agent also reports its account of the shipment as a claim (docs/claims.md).
 */
export interface ScenarioControls {
  readonly approval?: boolean
  readonly telemetry?: boolean
}

export interface Scenario {
  readonly id: ScenarioId
  readonly code: string
  readonly category: string
  readonly short: string
  readonly title: string
  readonly phase: string
  readonly lesson: string
  readonly rules: readonly RuleInput[]
  readonly controls?: ScenarioControls
}

export const SCENARIO_IDS = ['lost_ack', 'rate_limit', 'schema_drift', 'timeout', 'latency', 'blackout', 'telemetry_blackout', 'approval_outage'] as const
export type ScenarioId = (typeof SCENARIO_IDS)[number]

export const SCENARIOS: Readonly<Record<ScenarioId, Scenario>> = {
  lost_ack: {
    id: 'lost_ack',
    code: 'INC-001',
    category: 'SIDE EFFECTS',
    short: 'Lost acknowledgement',
    title: 'Lost acknowledgement',
    phase: 'After a write commits',
    lesson: 'Retrying a write without an idempotency key duplicates the shipment.',
    rules: [{ name: 'lost-receipt', route: 'create_shipment', kind: 'response_lost', calls: [1] }],
  },
  rate_limit: {
    id: 'rate_limit',
    code: 'INC-002',
    category: 'RECOVERY',
    short: 'Rate limit',
    title: 'Rate-limited inventory reads',
    phase: 'Before a read',
    lesson: 'The caller must wait for the advertised Retry-After within its budget.',
    rules: [{ name: 'inventory-busy', route: 'check_inventory', kind: 'rate_limit', calls: [1, 2], delay: 0.6 }],
  },
  schema_drift: {
    id: 'schema_drift',
    code: 'INC-003',
    category: 'VALIDATION',
    short: 'Malformed response',
    title: 'Invalid inventory response',
    phase: 'Instead of a valid response',
    lesson: 'Truthy data is not a validated response.',
    rules: [{ name: 'bad-inventory', route: 'check_inventory', kind: 'replace', calls: [1], replacement: { available: 'probably', warehouse: null } }],
  },
  timeout: {
    id: 'timeout',
    code: 'INC-004',
    category: 'RECOVERY',
    short: 'Read timeout',
    title: 'Inventory read timeout',
    phase: 'Before a read executes',
    lesson: 'A bounded read retry can recover.',
    rules: [{ name: 'slow-inventory', route: 'check_inventory', kind: 'timeout', calls: [1] }],
  },
  latency: {
    id: 'latency',
    code: 'INC-005',
    category: 'LATENCY',
    short: 'Slow dependency',
    title: 'Slow inventory response',
    phase: 'Before a read returns',
    lesson: 'Correct results can still violate a latency contract.',
    rules: [{ name: 'inventory-lag', route: 'check_inventory', kind: 'latency', calls: [1], delay: 1.4 }],
  },
  blackout: {
    id: 'blackout',
    code: 'INC-006',
    category: 'TERMINATION',
    short: 'Sustained outage',
    title: 'Sustained inventory outage',
    phase: 'On every inventory read',
    lesson: 'Bounded, honest failure is the expected outcome.',
    rules: [{ name: 'inventory-down', route: 'check_inventory', kind: 'unavailable' }],
  },
  telemetry_blackout: {
    id: 'telemetry_blackout',
    code: 'INC-007',
    category: 'CONTROL PLANE',
    short: 'Telemetry blackout',
    title: 'Observability endpoint times out',
    phase: 'On every telemetry report',
    lesson: 'Reporting must fail open: an agent that awaits its telemetry blows its latency budget.',
    rules: [{ name: 'telemetry-timeout', route: 'report_event', kind: 'timeout', delay: 2 }],
    controls: { telemetry: true },
  },
  approval_outage: {
    id: 'approval_outage',
    code: 'INC-008',
    category: 'CONTROL PLANE',
    short: 'Approval outage',
    title: 'Approval service unavailable',
    phase: 'On every approval request',
    lesson: 'Controls must fail closed: no approval, no shipment, and the agent says so.',
    rules: [{ name: 'approval-down', route: 'request_approval', kind: 'unavailable' }],
    controls: { approval: true },
  },
}

/** The scenario's rules with every probability overridden. */
export function scenarioRules(id: ScenarioId, probability: number): RuleInput[] {
  return SCENARIOS[id].rules.map((rule) => ({ ...rule, probability }))
}
