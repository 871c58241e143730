/**
 * Running `toolstorm explore` as a user does (the built bin), and the same search by hand: one
 * proxy, one run per variation with a rule of its own (`PUT /rules?run=`), the agent given that
 * run's proxy address, its verdict taken from its exit code and its report. The by-hand side uses
 * only the proxy and the admin API, none of src/explore.
 */
import { spawn } from 'node:child_process'
import { readFile } from 'node:fs/promises'
import path from 'node:path'
import { startProxy } from '../../src/proxy/proxy-server.js'
import type { Report } from '../../src/engine/schema/report.js'
import type { ExploreResult } from '../../src/explore/explore-result.js'
import { runCli, type CliResult } from '../helpers/cli.js'
import { closing, temporaryFolder } from '../helpers/teardown.js'

export interface ExploreRun extends CliResult {
  result: ExploreResult | null
  dir: string
}

/** `toolstorm explore --json <tmp>/result.json ARGS -- COMMAND`. */
export async function exploreCli(args: readonly string[], command: readonly string[], options: { timeoutMs?: number; env?: NodeJS.ProcessEnv } = {}): Promise<ExploreRun> {
  const dir = await temporaryFolder('toolstorm-explore-')
  const json = path.join(dir, 'result.json')
  const ran = await runCli(['explore', '--json', json, ...args, '--', ...command], { timeoutMs: options.timeoutMs ?? 120_000, ...(options.env ? { env: options.env } : {}) })
  const result = await readFile(json, 'utf8').then((text) => JSON.parse(text) as ExploreResult, () => null)
  return { ...ran, result, dir }
}

/** The matrix without times: what two explores of one agent must agree on. */
export function matrixOf(result: ExploreResult): unknown {
  return {
    sites: result.sites,
    variations: result.variations.map(({ id, origin, steps, status, fired, failed, exit, calls, effects }) => ({ id, origin, steps, status, fired, checks: failed.map((check) => check.check), exit: exit.code, calls, effects })),
    skipped: result.skipped,
    summary: result.summary,
  }
}

export type HandVerdict = 'pass' | 'fail' | 'not-exercised'

interface Step {
  route: string
  ordinal: number
  rule: Record<string, unknown>
  /** The rule's name: it seeds what a fault chooses (schema_drift's fields), so the same rule has the same name. */
  ruleName: string
}

function runChild(command: readonly string[], env: NodeJS.ProcessEnv, timeoutMs: number): Promise<number | null> {
  return new Promise((resolve) => {
    const child = spawn(command[0]!, command.slice(1), { env, stdio: 'ignore' })
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs)
    child.on('close', (code) => {
      clearTimeout(timer)
      resolve(code)
    })
  })
}

/**
 * One rule per run, by hand: each list of steps is one run on one proxy (forward mode), its rules
 * set with `PUT /rules?run=`, the command given `HTTP_PROXY` with the run in its credentials and
 * `TOOLSTORM_SIDECAR`. FAIL: a non-zero exit or an effect committed twice; not exercised: a rule
 * that never triggered.
 */
export async function byHand(command: readonly string[], runs: ReadonlyArray<readonly Step[]>, options: { jobs?: number; timeoutMs?: number } = {}): Promise<HandVerdict[]> {
  const proxy = closing(await startProxy({ port: 0, adminPort: 0 }))
  const admin = (method: string, what: string, body?: unknown) => fetch(`${proxy.adminUrl}${what}`, { method, headers: { authorization: `Bearer ${proxy.token}` }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) })
  const verdicts: HandVerdict[] = new Array<HandVerdict>(runs.length)
  let next = 0
  const worker = async () => {
    while (next < runs.length) {
      const index = next++
      const steps = runs[index]!
      const run = `hand-${index}`
      const names = steps.map((step) => step.ruleName)
      const put = await admin('PUT', `/rules?run=${run}`, { rules: steps.map((step, at) => ({ ...step.rule, name: names[at], route: step.route, calls: [step.ordinal] })) })
      if (!put.ok) throw new Error(`PUT /rules?run=${run}: ${put.status} ${await put.text()}`)
      const url = new URL(proxy.url)
      url.username = run
      url.password = 'x'
      const code = await runChild(command, { ...process.env, HTTP_PROXY: url.href, http_proxy: url.href, TOOLSTORM_SIDECAR: proxy.adminUrl, TOOLSTORM_RUN: run }, options.timeoutMs ?? 30_000)
      const report = (await (await admin('GET', `/report?run=${run}`)).json()) as Report
      const identities = report.effects.map((effect) => effect.identity)
      const duplicated = new Set(identities).size !== identities.length
      const fired = names.every((name) => (report.coverage[name]?.triggered ?? 0) > 0)
      verdicts[index] = code !== 0 || duplicated ? 'fail' : fired ? 'pass' : 'not-exercised'
    }
  }
  await Promise.all(Array.from({ length: options.jobs ?? 4 }, worker))
  return verdicts
}
