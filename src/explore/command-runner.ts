/**
 * Variations of a command (`toolstorm explore -- cmd`): one proxy records every run, and each
 * variation is one run of the command with its own run id, its own rules (`PUT /rules?run=`) and
 * the proxy's addresses naming that run in its environment (`/_run/<id>/` base URL, proxy
 * credentials in `HTTP_PROXY`, `TOOLSTORM_RUN`), so `--jobs N` runs N at once without one
 * shifting another's ordinals. Everything about a run is asked of the admin API, as a user's
 * script would: explore stays a client of the proxy.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { createCassetteRecorder } from '../cassette/record/cassette-recorder.js'
import { cassetteAdminRoute } from '../proxy/admin/cassette-admin-route.js'
import { Cassette } from '../cassette/format/cassette.js'
import type { CassetteExchange } from '../cassette/format/cassette-schema.js'
import { commandEnvironment } from '../cli/run-command.js'
import { createStorm } from '../create-storm.js'
import type { StormConfigInput } from '../engine/schema/config.js'
import type { Report } from '../engine/schema/report.js'
import { AdminApiError, ToolstormError } from '../errors.js'
import { startProxy, type ProxyOptions, type ProxyServer } from '../proxy/proxy-server.js'
import type { RunOutcome, RunRequest, VariationRunner } from './runner.js'
import { OutputTail } from './output-tail.js'
import { shellWord } from './counterexamples.js'

/** The proxy options explore passes on (where it listens, its targets, HTTPS); the rest are explore's. */
export type ExploreProxyOptions = Omit<ProxyOptions, 'storm' | 'config' | 'observer' | 'record' | 'adminRoutes' | 'state' | 'source'>

export interface CommandRunnerOptions {
  readonly command: readonly string[]
  /** How messages name the command (redacted); default its words. */
  readonly label?: string
  /** The proxy's own rules: named routes, redaction, MCP endpoints (its `rules` must be empty). */
  readonly base: StormConfigInput
  readonly proxy?: ExploreProxyOptions
  /** Extra environment for the command. */
  readonly env?: Readonly<Record<string, string>>
  /** Where each run's output goes as it comes (`--verbose`), besides its tail. */
  readonly onOutput?: (run: string, chunk: Buffer) => void
}

/** A calls still `running` after the command ended is given this long to finish (its socket's close on the way). */
const SETTLE_MS = 1_000

export async function startCommandRunner(options: CommandRunnerOptions): Promise<VariationRunner> {
  const [file] = options.command
  if (file === undefined || file === '') throw new ToolstormError('ERR_USAGE', 'Failed to explore: no command to run. Give it after "--": toolstorm explore -- node agent.js')
  // The proxy's plug-ins are its storm's.
  const { plugins, modelCalls, ...proxyOptions } = options.proxy ?? {}
  const storm = createStorm(options.base, { plugins, modelCalls })
  const targets = options.proxy?.targets ?? []
  // Origin-form URLs: a replay matches whatever host and port the agent names next time (a tool server of its own on a new port).
  const recorder = createCassetteRecorder(storm, { source: 'proxy', urlForm: 'origin', targets: [...targets] })
  // Forward mode intercepts HTTPS: the CA is made now (not on the first handshake), so that every run is told to trust it.
  const given = options.proxy?.ca
  const ca = targets.length === 0 && typeof given === 'function' ? await given() : given
  const proxy: ProxyServer = await startProxy({ port: 0, adminPort: 0, ...proxyOptions, ...(ca ? { ca } : {}), storm, observer: recorder.observer, adminRoutes: [cassetteAdminRoute(recorder)] })
  const caFile = proxy.mode === 'forward' && proxy.ca ? await writeCaFile(proxy.ca.certificatePem) : null
  const children = new Set<ChildProcess>()

  const admin = async (method: string, path: string, body?: unknown): Promise<Response> => {
    const response = await fetch(`${proxy.adminUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${proxy.token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    })
    if (!response.ok && response.status !== 404) {
      const text = await response.text()
      let message = text
      try {
        message = (JSON.parse(text) as { error: { message: string } }).error.message
      } catch {
        // not the error body: keep the text
      }
      throw new ToolstormError('ERR_INTERNAL', `Failed to ${method} ${path} on explore's proxy: ${response.status} ${message}`)
    }
    return response
  }

  const report = async (run: string): Promise<Report> => (await (await admin('GET', `/report?run=${encodeURIComponent(run)}`)).json()) as Report

  /** The report once no call of the run is still in flight (or after SETTLE_MS). */
  const settledReport = async (run: string): Promise<Report> => {
    const until = Date.now() + SETTLE_MS
    for (;;) {
      const current = await report(run)
      if (!current.calls.some((call) => call.outcome === 'running') || Date.now() > until) return current
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
  }

  const spawnRun = (run: string, timeoutMs: number): Promise<{ exit: RunOutcome['exit']; output: string; seconds: number }> =>
    new Promise((resolve, reject) => {
      const tail = new OutputTail()
      const started = performance.now()
      const env = { ...commandEnvironment({ proxyUrl: proxy.url, adminUrl: proxy.adminUrl, adminToken: proxy.token, run, mode: proxy.mode, caFile }), ...options.env }
      // Its own process group: a timeout ends whatever the command started too.
      const child = spawn(file, options.command.slice(1), { env, stdio: ['ignore', 'pipe', 'pipe'], detached: true })
      children.add(child)
      let timedOut = false
      const timer = setTimeout(() => {
        timedOut = true
        killGroup(child, 'SIGKILL')
      }, timeoutMs)
      const onData = (chunk: Buffer) => {
        tail.push(chunk)
        options.onOutput?.(run, chunk)
      }
      child.stdout!.on('data', onData)
      child.stderr!.on('data', onData)
      child.once('error', (error: NodeJS.ErrnoException) => {
        clearTimeout(timer)
        children.delete(child)
        if (error.code === 'ENOENT') reject(new ToolstormError('ERR_COMMAND_NOT_FOUND', `Failed to run "${file}": command not found. Check the command after "--" (and your PATH).`))
        else reject(new ToolstormError('ERR_COMMAND_NOT_FOUND', `Failed to run "${file}": ${error.message}. Check the command after "--".`))
      })
      child.once('close', (code, signal) => {
        clearTimeout(timer)
        children.delete(child)
        // Whatever it left running in its group goes with it.
        killGroup(child, 'SIGKILL')
        resolve({ exit: { code, signal, timedOut }, output: tail.text(), seconds: (performance.now() - started) / 1000 })
      })
    })

  return {
    label: options.label ?? options.command.map(shellWord).join(' '),
    howToConnect: [
      `HTTP_PROXY / HTTPS_PROXY (set for the command, naming its run: Python's clients, curl, Node with NODE_USE_ENV_PROXY=1 or undici's ProxyAgent read them; check NO_PROXY does not exempt your hosts)`,
      `TOOLSTORM_PROXY_URL as the base URL of your clients (with --target; it names the run: ${proxy.url}/_run/<id>)`,
      `or send x-toolstorm-run: $TOOLSTORM_RUN on requests you address to ${proxy.url}`,
    ],
    async run(request: RunRequest): Promise<RunOutcome> {
      await admin('PUT', `/rules?run=${encodeURIComponent(request.run)}`, request.rules)
      const ended = await spawnRun(request.run, request.timeoutMs)
      return { run: request.run, ...ended, report: await settledReport(request.run) }
    },
    async exchanges(run: string): Promise<CassetteExchange[]> {
      const response = await admin('GET', `/cassette?run=${encodeURIComponent(run)}`)
      if (response.status === 404) return []
      return [...Cassette.parse(await response.text(), `the recording of run ${run}`).exchanges]
    },
    async cassette(run: string): Promise<string> {
      const response = await admin('GET', `/cassette?run=${encodeURIComponent(run)}`)
      if (response.status === 404) throw new AdminApiError('ERR_ADMIN_NOT_FOUND', `Failed to export the cassette of run ${run}: it recorded no exchange.`)
      return response.text()
    },
    async forget(run: string): Promise<void> {
      // Its calls, effects and rules, and its recorded exchanges: explore keeps only what a counterexample needs (taken before).
      const query = `run=${encodeURIComponent(run)}`
      await Promise.all([admin('POST', `/reset?${query}`), admin('DELETE', `/rules?${query}`), admin('DELETE', `/cassette?${query}`)])
    },
    abort(): void {
      for (const child of children) killGroup(child, 'SIGKILL')
    },
    async close(): Promise<void> {
      for (const child of children) killGroup(child, 'SIGKILL')
      await proxy.close()
      await recorder.discard()
      if (caFile) await rm(path.dirname(caFile), { recursive: true, force: true })
    },
  }
}

/** The CA certificate in a file of its own, for the variables clients read their roots from (removed at close). */
async function writeCaFile(pem: string): Promise<string> {
  const file = path.join(await mkdtemp(path.join(os.tmpdir(), 'toolstorm-explore-ca-')), 'ca.pem')
  await writeFile(file, pem)
  return file
}

/** Signal the process group `child` leads (it was spawned detached); gone already is fine. */
function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return
  try {
    process.kill(-child.pid, signal)
  } catch {
    // The group is gone.
  }
}
