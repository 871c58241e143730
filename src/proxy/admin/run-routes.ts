/**
 * Admin routes that make one run a test of its own (the pytest plugin gives each test a run):
 *
 * | method | path | what |
 * |---|---|---|
 * | PUT | /rules?run=ID | the run's own rules file (seed, rules, routes, maxCalls): its calls are decided by it |
 * | GET | /rules?run=ID | the rules deciding the run's calls (its own, else the proxy's) |
 * | DELETE | /rules?run=ID | the run goes back to the proxy's rules |
 * | GET | /active-run | `{"run": ID or null}` |
 * | PUT | /active-run?run=ID | requests that name no run go to ID (instead of `default`) |
 * | DELETE | /active-run | back to `default` |
 * | POST | /contract?run=ID | `{"checks": [...]}` run on the run's report: `{"passed", "checks"}` |
 *
 * `PUT /rules` without `run` stays the proxy's (admin-server.ts). With a shared state store
 * (`--state`) a run's own rules are kept there, so that every replica decides its calls by them;
 * the active run would be this replica's alone, so it is refused there; contracts run on the
 * merged report.
 */
import type http from 'node:http'
import { AdminApiError, ConfigError } from '../../errors.js'
import { contractChecked, type ContractCheckedEvent } from '../../contracts/contract-events.js'
import { lintRules } from '../../lint/lint-rules.js'
import { parseConfig, type Storm } from '../../engine/storm.js'
import type { RedisRunState } from '../../state/redis-run-state.js'
import { parseDocument } from '../../io/read-input-file.js'
import { docsUrl } from '../../docs-url.js'
import { parseJsonBody, readBody, sendError, sendJson } from './admin-server.js'
import { RUN_ID } from '../../engine/run.js'
import { shownConfig } from './shown-config.js'

/** Fields of a rules file that stay the proxy's: a run cannot change how everything is redacted or which requests are MCP. */
const PROXY_WIDE_FIELDS = ['redact', 'mcp'] as const

type Route = (req: http.IncomingMessage, res: http.ServerResponse, url: URL) => Promise<boolean>

export function runRoutes(storm: Storm, shared: RedisRunState | null = null): Route {
  return async (req, res, url) => {
    const run = url.searchParams.get('run')
    const route = `${req.method} ${url.pathname}`
    const perRunRules = url.pathname === '/rules' && run !== null
    if (!perRunRules && url.pathname !== '/active-run' && route !== 'POST /contract') return false
    try {
      if (run !== null && !RUN_ID.test(run)) throw new ConfigError(`Failed to use ${route}: "${run.slice(0, 140)}" is not a run id (1-128 letters, digits, ".", "_", "~" or "-").`, { code: 'ERR_USAGE' })
      if (shared && url.pathname === '/active-run') {
        throw new AdminApiError('ERR_STATE', `Failed to use ${route}${run === null ? '' : `?run=${run}`}: with a shared state store (--state) the active run is not shared between replicas. Name runs with x-toolstorm-run (a run's own rules, PUT /rules?run=, are shared). See ${docsUrl('scale-out.md')}.`)
      }
      switch (route) {
        case 'PUT /rules': {
          const text = await readBody(req)
          const where = `PUT /rules?run=${run}`
          const document = /yaml/i.test(req.headers['content-type'] ?? '') ? parseDocument(text, where, { format: 'yaml' }) : parseJsonBody(text, where)
          const proxyWide = document !== null && typeof document === 'object' ? PROXY_WIDE_FIELDS.find((field) => field in document) : undefined
          if (proxyWide) throw new ConfigError(`Failed to load rules from ${where}: $.${proxyWide}: a run's rules cannot set "${proxyWide}"; it is the proxy's for every run. Set it with PUT /rules (no run).`)
          const config = parseConfig(document, where, storm.faults)
          // Shared first: a replica never decides by rules the others did not get.
          await shared?.publishRunRules(run as string, config)
          storm.setRunConfig(run as string, config)
          sendJson(res, 200, { ok: true, run, rules: config.rules.length, warnings: lintRules(config, storm.plugins) })
          return true
        }
        case 'GET /rules':
          await shared?.syncRunRules(run as string)
          sendJson(res, 200, { ...shownConfig(storm), ...runView(storm, run as string) })
          return true
        case 'DELETE /rules':
          await shared?.publishRunRules(run as string, null)
          storm.setRunConfig(run as string, null)
          sendJson(res, 200, { ok: true, run })
          return true
        case 'GET /active-run':
          sendJson(res, 200, { run: storm.decider.activeRun })
          return true
        case 'PUT /active-run':
          if (run === null) throw new ConfigError('Failed to use PUT /active-run: name the run, as in PUT /active-run?run=<id>.', { code: 'ERR_USAGE' })
          storm.decider.activeRun = run
          sendJson(res, 200, { ok: true, run })
          return true
        case 'DELETE /active-run':
          storm.decider.activeRun = null
          sendJson(res, 200, { ok: true, run: null })
          return true
        case 'POST /contract': {
          // The contract units are loaded with the first contract asked for, not at every start.
          const { parseContractRequest, runContract } = await import('../../contracts/contract-request.js')
          const checks = parseContractRequest(parseJsonBody(await readBody(req), 'POST /contract'), 'POST /contract')
          await storm.settled(run ?? undefined)
          const report = shared ? await shared.report(run ?? undefined) : storm.report(run ?? undefined)
          const result = runContract(report, checks)
          if (contractChecked.hasSubscribers) contractChecked.publish({ storm: storm.nonce, run: report.run, passed: result.passed, failed: result.checks.filter((check) => !check.passed).map((check) => `${check.name}: ${check.detail}`) } satisfies ContractCheckedEvent)
          sendJson(res, 200, { run: report.run, ...result })
          return true
        }
        default:
          throw new AdminApiError('ERR_ADMIN_NOT_FOUND', `Failed to use the admin API: no endpoint ${req.method} ${url.pathname}${perRunRules ? '?run=' : ''}. See ${docsUrl('admin-api.md')}.`)
      }
    } catch (error) {
      sendError(res, error)
      return true
    }
  }
}

/** What `GET /rules?run=ID` shows of the run's own rules (the proxy's redaction applied). */
function runView(storm: Storm, run: string): Record<string, unknown> {
  const config = storm.decider.configOf(run)
  const report = storm.report(run)
  return { run, own: storm.decider.hasRunConfig(run), seed: config.seed, routes: { ...config.routes }, rules: report.rules, maxCalls: config.maxCalls }
}
