/**
 * The lab through a real proxy process on loopback: `toolstorm proxy --clock virtual` in front of
 * the shipping service. The service reports commits to the proxy's sidecar with the effects
 * helper, and every participant spends time on the proxy's virtual clock through the admin API,
 * so verdicts and timings are the in-process ones.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import { MissingPeerError, ToolstormError } from '../errors.js'
import type { Report } from '../engine/schema/report.js'
import { ToolstormEffects } from '../effects/toolstorm-effects.js'
import { runAgent, type TaskOutcome } from './agent.js'
import { connectMcpTools, MCP_PATH, startMcpShippingService, type McpTools } from './mcp-shipping.js'
import type { ServiceHooks } from './shipping-logic.js'
import type { DemoTransport } from './run-demo.js'
import { ROUTES, SCENARIOS, scenarioRules } from './scenarios.js'
import { Background } from './background.js'
import type { AgentOptions } from './agent.js'
import { startShippingService, type ShippingService } from './shipping-service.js'

const BIN = fileURLToPath(new URL('../../bin/toolstorm.js', import.meta.url))

export interface ProxyDemoTransport extends DemoTransport {
  close(): Promise<void>
}

/**
 * Start the service and a proxy process; runs share them, each with its own run id. With `mcp`,
 * the service is an MCP server whose tools the agent calls with the SDK client, and the
 * scenarios' rules target `tools/call <tool>`.
 */
export async function startProxyDemoTransport(options: { mcp?: boolean } = {}): Promise<ProxyDemoTransport> {
  const token = randomBytes(18).toString('base64url')
  let admin = ''
  const advance = async (seconds: number): Promise<number> => {
    const response = await fetch(`${admin}/clock/advance`, { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: JSON.stringify({ seconds }) })
    if (!response.ok) throw new ToolstormError('ERR_INTERNAL', `Failed to advance the proxy's clock: HTTP ${response.status}.`)
    return ((await response.json()) as { now: number }).now
  }
  let effects: ToolstormEffects | null = null
  const hooks: ServiceHooks = {
    sleep: async (seconds) => void (await advance(seconds)),
    effect: async (name, key, call) => void (await effects?.report(call ?? null, name, key)),
  }
  const service: ShippingService = options.mcp ? await startMcpShippingService(hooks) : await startShippingService(hooks)
  const child: ChildProcess = spawn(process.execPath, [BIN, 'proxy', '--target', service.url, '--port', '0', '--admin-port', '0', '--clock', 'virtual', `--admin-token=${token}`], {
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stderr = ''
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
  const firstLine = await new Promise<string>((resolve, reject) => {
    let buffer = ''
    child.stdout?.on('data', (chunk: Buffer) => {
      buffer += chunk.toString()
      if (buffer.includes('\n')) resolve(buffer.slice(0, buffer.indexOf('\n')))
    })
    child.once('exit', (code) => reject(new ToolstormError('ERR_INTERNAL', `Failed to start the demo proxy (exit ${code}): ${stderr.trim()}`)))
  })
  const match = /^toolstorm proxy (\S+) .* · admin (\S+)$/.exec(firstLine)
  if (!match) throw new ToolstormError('ERR_INTERNAL', `Failed to start the demo proxy: unexpected first line "${firstLine}".`)
  const proxyUrl = match[1] as string
  admin = match[2] as string
  // The lab must not lose evidence on a loaded machine: a generous timeout, unlike production tool servers.
  effects = new ToolstormEffects({ sidecarUrl: admin, token, timeoutMs: 10_000 })
  let runs = 0

  return {
    async run(config, policy) {
      service.reset()
      const runId = `${config.scenario}-${policy}-${++runs}`
      const rules = options.mcp
        ? { seed: config.seed, rules: scenarioRules(config.scenario, config.probability).map((rule) => ({ ...rule, route: `tools/call ${rule.route}` })), maxCalls: config.maxCalls }
        : { seed: config.seed, routes: ROUTES, rules: scenarioRules(config.scenario, config.probability), maxCalls: config.maxCalls }
      const put = await fetch(`${admin}/rules`, { method: 'PUT', headers: { authorization: `Bearer ${token}` }, body: JSON.stringify(rules) })
      if (!put.ok) throw new ToolstormError('ERR_CONFIG_INVALID', `Failed to load the scenario's rules into the proxy: ${await put.text()}`)
      const started = await advance(0)
      const headers = { 'x-toolstorm-run': runId }
      const sleep = async (seconds: number) => void (await advance(seconds))
      const background = new Background()
      const agent: Omit<AgentOptions, 'tools' | 'baseUrl' | 'headers'> = {
        policy,
        sleep,
        controls: SCENARIOS[config.scenario].controls,
        claim: async (claim) => effects?.claim({ ...claim, run: runId }),
        background,
      }
      // The task's time ends when the agent returns; a report it left running is drained after.
      let elapsed = 0
      const ended = async () => void (elapsed = (await advance(0)) - started)
      const outcome = options.mcp ? await runMcpAgent(`${proxyUrl}${MCP_PATH}`, headers, agent, ended) : await runAgent({ ...agent, baseUrl: proxyUrl, headers }).then(async (done) => (await ended(), done))
      await background.drain()
      const response = await fetch(`${admin}/report?run=${encodeURIComponent(runId)}`, { headers: { authorization: `Bearer ${token}` } })
      // A run the agent never reached the proxy for has no calls: report an empty run.
      const report = response.status === 404 ? emptyReport(runId, config.seed) : ((await response.json()) as Report)
      return { outcome, report, shipments: service.shipments.length, elapsed }
    },
    routeOf: (tool) => (options.mcp ? `tools/call ${tool}` : tool),
    async close() {
      child.kill('SIGTERM')
      await new Promise<void>((resolve) => (child.exitCode !== null ? resolve() : child.once('exit', () => resolve())))
      await service.close()
    },
  }
}

/** The agent over MCP: it connects (initialize), then runs the task with the tools of the session. */
async function runMcpAgent(url: string, headers: Record<string, string>, agent: Omit<AgentOptions, 'tools' | 'baseUrl' | 'headers'>, ended: () => Promise<void>): Promise<TaskOutcome> {
  let tools: McpTools
  try {
    tools = await connectMcpTools(url, headers)
  } catch (error) {
    if (error instanceof MissingPeerError) throw error
    await ended()
    return { completed: false, reason: error instanceof Error ? error.name : 'Error' }
  }
  try {
    const outcome = await runAgent({ ...agent, tools })
    await ended()
    return outcome
  } finally {
    // A fail-open report still running uses the session: close it once that is done.
    await agent.background?.drain()
    await tools.close()
  }
}

function emptyReport(run: string, seed: number): Report {
  return { version: 1, kind: 'toolstorm.report', toolstorm: '', run, seed, clock: 'virtual', maxCalls: null, routes: {}, rules: [], coverage: {}, calls: [], droppedCalls: 0, effects: [], budgetRejections: 0 }
}
