import type { Argv, CommandModule } from 'yargs'
import { POLICY_IDS, type PolicyId } from '../../demo/agent.js'
import { formatDemoHeader, formatDemoRun } from '../../demo/format-demo.js'
import { DEFAULT_DEMO_CONFIG, runComparison, runDemo, type DemoComparison, type DemoConfig, type DemoRun, type DemoTransport } from '../../demo/run-demo.js'
import { SCENARIO_IDS, type ScenarioId } from '../../demo/scenarios.js'
import { writeFileAtomic } from '../../io/write-file-atomic.js'
import { printLine } from '../output.js'
import { numberOption } from '../numeric-options.js'
import { SEED_LIMIT } from '../../engine/schema/config.js'
import { DEMO_VIAS, demoTransportFor, type DemoVia } from '../../demo/transports.js'
import { VERSION } from '../../version.js'

interface DemoArgs {
  scenario: ScenarioId | 'all'
  policy?: PolicyId | 'all'
  seed: number
  probability: number
  'max-calls': number
  json: boolean
  output?: string
  'fail-on-contract': boolean
  via: DemoVia
  explore: boolean
}

export const demoCommand: CommandModule<object, DemoArgs> = {
  command: 'demo',
  describe: 'Run the shipping lab: an agent, a shipping service and a fault scenario',
  builder: (yargs: Argv) =>
    yargs
      .option('scenario', { choices: [...SCENARIO_IDS, 'all'] as const, default: 'lost_ack' as const, describe: 'Fault scenario, or all of them' })
      .option('policy', { choices: [...POLICY_IDS, 'all'] as const, describe: 'Recovery policy, or all three as a comparison (default: resilient; with --explore, all)' })
      .option('seed', { ...numberOption('seed', { min: -SEED_LIMIT, max: SEED_LIMIT, expected: 'an integer within ±(2^53−1)' }), default: DEFAULT_DEMO_CONFIG.seed, describe: 'Seed for fault decisions' })
      .option('probability', { ...numberOption('probability', { min: 0, max: 1, integer: false }), default: 1, describe: 'Probability of every scenario rule (0–1)' })
      .option('max-calls', { ...numberOption('max-calls', { min: 1, max: 20 }), default: 8, describe: 'Call budget (1–20)' })
      .option('json', { type: 'boolean', default: false, describe: 'Print the full result as JSON' })
      .option('output', { type: 'string', describe: 'Write the full result as JSON to this file (atomically)' })
      .option('fail-on-contract', { type: 'boolean', default: false, describe: 'Exit 1 when any run fails its contract' })
      .option('explore', { type: 'boolean', default: false, describe: 'Explore the agent instead of running scenarios: every call × every fault it can have, for each policy (with --policy: that one)' })
      .option('via', { choices: DEMO_VIAS, default: 'proxy' as const, describe: 'Through a real proxy process on loopback, in-process interception, or a proxy in front of an MCP server (mcp: needs @modelcontextprotocol/sdk)' }) as unknown as Argv<DemoArgs>,
  async handler(args) {
    const policy = args.policy ?? (args.explore ? 'all' : 'resilient')
    if (args.explore) {
      const { exploreDemo, exploreDemoPolicy, formatDemoExploration } = await import('../../demo/explore-demo.js')
      const options = { seed: args.seed, jobs: 4 }
      const explored = policy === 'all' ? await exploreDemo(options) : [{ policy, result: await exploreDemoPolicy(policy, options) }]
      const document = { version: 1, kind: 'toolstorm.demo-explore', toolstorm: VERSION, runs: explored }
      if (args.output) await writeFileAtomic(args.output, JSON.stringify(document, null, 2) + '\n')
      if (args.json) printLine(JSON.stringify(document, null, 2))
      else for (const line of formatDemoExploration(explored, args.seed)) printLine(line)
      if (args['fail-on-contract'] && explored.some(({ result }) => result.summary.failed > 0)) process.exitCode = 1
      return
    }
    const scenarios = args.scenario === 'all' ? [...SCENARIO_IDS] : [args.scenario]
    const transport: DemoTransport & { close?: () => Promise<void> } = await demoTransportFor(args.via)
    const results: Array<DemoRun | DemoComparison> = []
    const lines: string[] = []
    try {
      for (const scenario of scenarios) {
        const config: DemoConfig = { scenario, seed: args.seed, probability: args.probability, maxCalls: args['max-calls'] }
        if (policy === 'all') {
          const comparison = await runComparison(config, transport)
          results.push(comparison)
          lines.push(formatDemoHeader(scenario, args.seed), ...comparison.runs.flatMap(formatDemoRun))
        } else {
          const run = await runDemo(config, policy, transport)
          results.push(run)
          lines.push(formatDemoHeader(scenario, args.seed), ...formatDemoRun(run))
        }
      }
    } finally {
      await transport.close?.()
    }
    const runs = results.flatMap((result) => ('runs' in result ? result.runs : [result]))
    const document = results.length === 1 ? results[0] : { version: 1, kind: 'toolstorm.demo-suite', toolstorm: VERSION, runs }
    if (args.output) await writeFileAtomic(args.output, JSON.stringify(document, null, 2) + '\n')
    if (args.json) printLine(JSON.stringify(document, null, 2))
    else for (const line of lines) printLine(line)
    if (args['fail-on-contract'] && runs.some((run) => !run.contract.passed)) process.exitCode = 1
  },
}
