import { describe, expect, it } from 'vitest'
import { POLICY_IDS } from '../../src/demo/agent.js'
import { memoryTransport } from '../../src/demo/memory-transport.js'
import { inProcessTransport, runDemo, type DemoConfig } from '../../src/demo/run-demo.js'
import { SCENARIO_IDS } from '../../src/demo/scenarios.js'

const SETTINGS = [
  { seed: 42, probability: 1, maxCalls: 8 },
  { seed: 1729, probability: 0.5, maxCalls: 8 },
  { seed: 7, probability: 0.35, maxCalls: 3 },
]

describe('the in-memory lab transport (the browser lab’s)', () => {
  it('gives the in-process transport’s reports, byte for byte, for every scenario and policy', async () => {
    for (const settings of SETTINGS) {
      for (const scenario of SCENARIO_IDS) {
        const config: DemoConfig = { scenario, ...settings }
        for (const policy of POLICY_IDS) {
          const memory = await runDemo(config, policy, memoryTransport)
          const inProcess = await runDemo(config, policy, inProcessTransport)
          expect({ scenario, policy, ...settings, digest: memory.digest, contract: memory.contract, stats: memory.stats }).toEqual({
            scenario,
            policy,
            ...settings,
            digest: inProcess.digest,
            contract: inProcess.contract,
            stats: inProcess.stats,
          })
        }
      }
    }
  })

  it('reproduces the reference’s golden verdicts at the defaults', async () => {
    const verdicts: Record<string, string> = {}
    for (const scenario of SCENARIO_IDS) {
      for (const policy of POLICY_IDS) {
        const run = await runDemo({ scenario, seed: 42, probability: 1, maxCalls: 8 }, policy, memoryTransport)
        verdicts[`${scenario}/${policy}`] = `${run.contract.passed ? 'PASS' : 'FAIL'} ${run.stats.calls} ${run.stats.effects} ${run.stats.elapsed.toFixed(2)}`
      }
    }
    expect(verdicts).toEqual({
      'lost_ack/optimistic': 'FAIL 2 1 0.20',
      'lost_ack/retry': 'FAIL 3 2 0.32',
      'lost_ack/resilient': 'PASS 3 1 0.47',
      'rate_limit/optimistic': 'FAIL 1 0 0.00',
      'rate_limit/retry': 'FAIL 4 1 0.20',
      'rate_limit/resilient': 'PASS 4 1 1.40',
      'schema_drift/optimistic': 'FAIL 2 0 0.12',
      'schema_drift/retry': 'FAIL 4 0 0.36',
      'schema_drift/resilient': 'PASS 3 1 0.35',
      'timeout/optimistic': 'FAIL 1 0 0.00',
      'timeout/retry': 'PASS 3 1 0.20',
      'timeout/resilient': 'PASS 3 1 0.35',
      'latency/optimistic': 'FAIL 2 1 1.60',
      'latency/retry': 'FAIL 2 1 1.60',
      'latency/resilient': 'FAIL 2 1 1.60',
      'blackout/optimistic': 'PASS 1 0 0.00',
      'blackout/retry': 'PASS 3 0 0.00',
      'blackout/resilient': 'PASS 3 0 0.45',
      'telemetry_blackout/optimistic': 'FAIL 3 1 2.20',
      'telemetry_blackout/retry': 'FAIL 5 1 6.20',
      'telemetry_blackout/resilient': 'PASS 5 1 0.20',
      'approval_outage/optimistic': 'FAIL 3 1 0.20',
      'approval_outage/retry': 'FAIL 5 1 0.20',
      'approval_outage/resilient': 'PASS 4 0 0.53',
    })
  })
})
