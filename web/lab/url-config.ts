/**
 * The lab's settings in the URL query (`scenario, seed, p, budget, policy`), as the reference
 * lab writes them. Invalid or missing values fall back to the defaults; `p` is snapped to the
 * slider's 5 % steps.
 */
import { POLICY_IDS, type PolicyId } from '../../dist/demo/agent.js'
import type { DemoConfig } from '../../dist/demo/run-demo.js'
import { SCENARIO_IDS, type ScenarioId } from '../../dist/demo/scenarios.js'

export interface LabSettings {
  readonly config: DemoConfig
  readonly policy: PolicyId
}

export const DEFAULT_SETTINGS: LabSettings = { config: { scenario: 'lost_ack', seed: 42, probability: 1, maxCalls: 8 }, policy: 'retry' }

export const SEED_MAX = 999_999
export const BUDGET_MIN = 1
export const BUDGET_MAX = 20

/** A probability rounded to the slider's 5 % steps. */
export function snapProbability(p: number): number {
  return Math.round(p * 20) / 20
}

export function parseSettings(search: string): LabSettings {
  const query = new URLSearchParams(search)
  const scenario = query.get('scenario')
  const seed = query.get('seed')
  const p = query.get('p')
  const budget = query.get('budget')
  const policy = query.get('policy')
  const d = DEFAULT_SETTINGS
  const probability = p !== null && /^(0|1|0?\.\d+|1\.0*)$/.test(p) ? snapProbability(Number(p)) : d.config.probability
  return {
    config: {
      scenario: scenario !== null && (SCENARIO_IDS as readonly string[]).includes(scenario) ? (scenario as ScenarioId) : d.config.scenario,
      seed: seed !== null && /^\d{1,6}$/.test(seed) ? Number(seed) : d.config.seed,
      probability,
      maxCalls: budget !== null && /^\d{1,2}$/.test(budget) && Number(budget) >= BUDGET_MIN && Number(budget) <= BUDGET_MAX ? Number(budget) : d.config.maxCalls,
    },
    policy: policy !== null && (POLICY_IDS as readonly string[]).includes(policy) ? (policy as PolicyId) : d.policy,
  }
}

export function formatSettings({ config, policy }: LabSettings): string {
  const query = new URLSearchParams({ scenario: config.scenario, seed: String(config.seed), p: String(config.probability), budget: String(config.maxCalls), policy })
  return `?${query.toString()}`
}
