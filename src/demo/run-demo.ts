/**
 * Run the shipping lab: one scenario × policy, or all three policies as a comparison.
 * The agent, the service and the storm share one virtual clock, so timings are the reference's.
 */
import { createHash } from 'node:crypto'
import { ConfigError } from '../errors.js'
import { canonicalJson } from '../json/canonical-json.js'
import { VirtualClock, roundSeconds } from '../engine/clock.js'
import { contract, type ContractResult } from '../contracts/contract.js'
import { scenarioChecks } from './scenario-checks.js'
import type { Report } from '../engine/schema/report.js'
import { createStorm } from '../create-storm.js'
import type { Storm } from '../engine/storm.js'
import { intercept } from '../interceptors/intercept.js'
import { VERSION } from '../version.js'
import { POLICY_IDS, runAgent, type AgentOptions, type PolicyId, type TaskOutcome } from './agent.js'
import { ROUTES, SCENARIO_IDS, SCENARIOS, scenarioRules, type ScenarioId } from './scenarios.js'
import { Background } from './background.js'
import { ingestClaim } from '../claims/ingest-claims.js'
import { startShippingService } from './shipping-service.js'

export interface DemoConfig {
  readonly scenario: ScenarioId
  readonly seed: number
  readonly probability: number
  readonly maxCalls: number
}

export interface DemoStats {
  readonly calls: number
  readonly effects: number
  readonly faults: number
  readonly elapsed: number
}

export interface DemoRun {
  readonly scenario: ScenarioId
  readonly policy: PolicyId
  readonly seed: number
  readonly config: DemoConfig
  readonly outcome: TaskOutcome
  readonly shipments: number
  readonly report: Report
  readonly contract: ContractResult
  readonly stats: DemoStats
  readonly digest: string
}

export interface DemoComparison {
  readonly version: 1
  readonly kind: 'toolstorm.comparison'
  readonly toolstorm: string
  readonly scenario: ScenarioId
  readonly config: DemoConfig
  readonly runs: DemoRun[]
}

export const DEFAULT_DEMO_CONFIG: DemoConfig = { scenario: 'lost_ack', seed: 42, probability: 1, maxCalls: 8 }

/** The origin the lab's agent calls; interception maps it to the embedded service. */
export const LAB_ORIGIN = 'http://shipping.lab'

export { LATENCY_BUDGET_SECONDS } from './scenario-checks.js'

/** Check a demo configuration, with the reference's messages. */
export function validateDemoConfig(config: DemoConfig, policy?: string): void {
  if (!SCENARIO_IDS.includes(config.scenario)) {
    throw new ConfigError(`Unknown demo scenario or policy: scenario "${config.scenario}" is not one of ${SCENARIO_IDS.join(', ')}`)
  }
  if (policy !== undefined && !(POLICY_IDS as readonly string[]).includes(policy)) {
    throw new ConfigError(`Unknown demo scenario or policy: policy "${policy}" is not one of ${POLICY_IDS.join(', ')}`)
  }
  if (!Number.isInteger(config.maxCalls) || config.maxCalls < 1 || config.maxCalls > 20) throw new ConfigError('Demo call budget must be between 1 and 20')
  if (!Number.isFinite(config.probability) || config.probability < 0 || config.probability > 1) throw new ConfigError('Invalid fault rule: probability must be between 0 and 1')
  if (!Number.isSafeInteger(config.seed)) throw new ConfigError('Seed must be an integer in the JavaScript-safe range')
}

/** How a run reaches the shipping service: in-process interception, or a proxy. */
export interface DemoTransport {
  run(config: DemoConfig, policy: PolicyId): Promise<{ outcome: TaskOutcome; report: Report; shipments: number; elapsed: number }>
  /** The route name the report gives a tool's calls (`tools/call <tool>` over MCP); the tool's name by default. */
  routeOf?(tool: string): string
}

/** In-process: MSW's interceptors route the agent's fetch calls through the storm. */
export const inProcessTransport: DemoTransport = {
  async run(config, policy) {
    const clock = new VirtualClock()
    const storm = createStorm({ seed: config.seed, routes: ROUTES, rules: scenarioRules(config.scenario, config.probability), maxCalls: config.maxCalls }, { clock })
    const service = await startShippingService({
      sleep: (seconds) => clock.sleep(seconds),
      effect: async (name, key, call) => {
        storm.effect(name, key, { call: call ?? null })
      },
    })
    // The agent calls a stable virtual host, so reports (and their digests) do not depend on the port.
    const interception = intercept(storm, { targets: { [LAB_ORIGIN]: service.url } })
    try {
      const { outcome, elapsed } = await runAgentOnStorm(storm, clock, config, policy)
      return { outcome, report: storm.report(), shipments: service.shipments.length, elapsed }
    } finally {
      interception.dispose()
      await service.close()
    }
  },
}

/**
 * The agent against `LAB_ORIGIN` on one storm and virtual clock, with the scenario's control
 * plane: its claims go to the storm, and the task's time is taken when it returns, before its
 * outbox of fail-open reports is drained (those calls are still in the report).
 */
export async function runAgentOnStorm(storm: Storm, clock: VirtualClock, config: DemoConfig, policy: PolicyId, fetch?: AgentOptions['fetch']): Promise<{ outcome: TaskOutcome; elapsed: number }> {
  const background = new Background()
  const outcome = await runAgent({
    baseUrl: LAB_ORIGIN,
    policy,
    sleep: (seconds) => clock.sleep(seconds),
    ...(fetch ? { fetch } : {}),
    controls: SCENARIOS[config.scenario].controls,
    claim: (claim) => ingestClaim(storm, storm.ledger, claim),
    background,
  })
  const elapsed = clock.now()
  await background.drain()
  return { outcome, elapsed }
}

/**
 * The scenario's contract, with the reference's checks in the reference's order. The approval
 * outage adds `effectsRequireApproval` on the shipment; the control-plane scenarios hold the
 * agent's claims against the effects.
 */
export function scenarioContract(scenario: ScenarioId, report: Report, maxCalls: number, outcome: TaskOutcome, shipments: number, elapsed: number, routeOf: (tool: string) => string = (tool) => tool): ContractResult {
  const checks = contract(report).requireTriggered().noDuplicateEffects().atMostCalls(maxCalls)
  return scenarioChecks(checks, scenario, { completed: outcome.completed, shipments, elapsed, routeOf, claims: Boolean(report.claims?.length) }).toJSON()
}


/** SHA-256 of the report's canonical JSON: identifies bytes, not a signature. */
export function reportDigest(report: Report): string {
  return createHash('sha256').update(canonicalJson(report)).digest('hex')
}

/** Run one scenario with one policy. */
export async function runDemo(config: DemoConfig, policy: PolicyId, transport: DemoTransport = inProcessTransport): Promise<DemoRun> {
  validateDemoConfig(config, policy)
  const { outcome, report, shipments, elapsed } = await transport.run(config, policy)
  const seconds = roundSeconds(elapsed)
  const faults = Object.values(report.coverage).reduce((sum, counts) => sum + counts.triggered, 0)
  return {
    scenario: config.scenario,
    policy,
    seed: config.seed,
    config,
    outcome,
    shipments,
    report,
    contract: scenarioContract(config.scenario, report, config.maxCalls, outcome, shipments, seconds, transport.routeOf?.bind(transport)),
    stats: { calls: report.calls.length, effects: report.effects.length, faults, elapsed: seconds },
    digest: reportDigest(report),
  }
}

/** Run all three policies on one scenario. */
export async function runComparison(config: DemoConfig, transport: DemoTransport = inProcessTransport): Promise<DemoComparison> {
  validateDemoConfig(config)
  const runs: DemoRun[] = []
  for (const policy of POLICY_IDS) runs.push(await runDemo(config, policy, transport))
  return { version: 1, kind: 'toolstorm.comparison', toolstorm: VERSION, scenario: config.scenario, config, runs }
}
