/**
 * `toolstorm demo --explore`: the lab's shipping agent explored, once per recovery policy, with
 * no scenario written by hand. Each variation is one run of the agent in this process (its own
 * shipping service, storm and virtual clock), judged as the scenarios judge it: the task completes
 * (a confirmed shipment) within the latency budget, and no shipment is committed twice. Explore
 * must find by itself what the scenarios show: "No retries" and "Unchecked retries" fail, and
 * "Validated retries" passes every exercised variation.
 */
import { VirtualClock } from '../engine/clock.js'
import type { ExploreResult } from '../explore/explore-result.js'
import { explore } from '../explore/explore.js'
import { describeOf } from '../explore/format-matrix.js'
import { POLICIES, POLICY_IDS, runAgent, type PolicyId } from './agent.js'
import { LATENCY_BUDGET_SECONDS } from './run-demo.js'
import { ROUTES } from './scenarios.js'
import { startShippingService } from './shipping-service.js'

export interface DemoExploration {
  readonly policy: PolicyId
  readonly result: ExploreResult
}

/** Explore the lab's agent with one policy. */
export async function exploreDemoPolicy(policy: PolicyId, options: { seed: number; jobs: number }): Promise<ExploreResult> {
  const { result } = await explore({
    rules: { routes: ROUTES },
    seed: options.seed,
    jobs: options.jobs,
    clock: () => new VirtualClock(),
    async run({ storm }) {
      const clock = storm.clock
      // A fresh warehouse per run: its idempotency keys and shipments are this run's alone.
      const service = await startShippingService({ sleep: (seconds) => clock.sleep(seconds), effect: async (name, key, call) => void storm.effect(name, key, { call: call ?? null }) })
      try {
        const started = clock.now()
        const outcome = await runAgent({ baseUrl: service.url, policy, sleep: (seconds) => clock.sleep(seconds) })
        const elapsed = clock.now() - started
        if (!outcome.completed) throw new Error(`Task completed: no confirmed shipment (${outcome.reason})`)
        if (elapsed > LATENCY_BUDGET_SECONDS + 1e-9) throw new Error(`Latency budget: ${elapsed.toFixed(2)}s / ${LATENCY_BUDGET_SECONDS.toFixed(2)}s virtual time`)
      } finally {
        await service.close()
      }
    },
  })
  return result
}

/** All three policies. */
export async function exploreDemo(options: { seed: number; jobs: number }): Promise<DemoExploration[]> {
  const explored: DemoExploration[] = []
  for (const policy of POLICY_IDS) explored.push({ policy, result: await exploreDemoPolicy(policy, options) })
  return explored
}

/** Why a failing variation failed, in one line: its first failed check (a thrown check names itself). */
function why(variation: ExploreResult['variations'][number]): string {
  const first = variation.failed[0]
  if (!first) return ''
  if (first.check === 'Command exit' && variation.output) return variation.output.split('\n')[0]!.replace(/^Error: /, '')
  return `${first.check}: ${first.detail}`
}

/** The demo table: a verdict per policy, and each failure the search found. */
export function formatDemoExploration(explored: readonly DemoExploration[], seed: number): string[] {
  const lines = [`toolstorm explore · the lab's shipping agent, every call × every fault it can have · seed ${seed}`]
  for (const { policy, result } of explored) {
    const { summary } = result
    const verdict = (summary.failed ? 'FAIL' : 'PASS').padEnd(4)
    lines.push(`${verdict}  ${POLICIES[policy].name.padEnd(24)} ${summary.variations} variations: ${summary.passed} pass, ${summary.failed} fail, ${summary.notExercised} not exercised`)
    for (const variation of result.variations.filter((candidate) => candidate.status === 'fail')) lines.push(`  ✗ ${describeOf(variation)}: ${why(variation)}`)
  }
  lines.push('', 'Next: explore your own agent, npx toolstorm explore -- <your agent command>')
  return lines
}
