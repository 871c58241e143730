/**
 * The live dashboard on the admin server:
 *
 * | method | path | token | what |
 * |---|---|---|---|
 * | GET | /dashboard/… | no | the built page (a static shell: it holds no data) |
 * | GET | /events?run=ID | yes | the run's evidence as server-sent events (`events.ts`) |
 * | PUT | /dashboard/rules | yes | replace the rules from the dashboard's editor (see below) |
 *
 * The page reads the token from its URL fragment (`#token=…`, never sent to the server) and
 * sends it as a bearer token with every data request.
 *
 * @see ../../../docs/dashboard.md
 */
import type http from 'node:http'
import { AdminApiError } from '../../errors.js'
import { parseStrictJson, StrictJsonError } from '../../json/strict-json.js'
import { parseConfig, type Storm } from '../../engine/storm.js'
import { NO_RUN } from '../../engine/run.js'
import { lintRules } from '../../lint/lint-rules.js'
import type { StormConfig } from '../../engine/schema/config.js'
import { parseDocument } from '../../io/read-input-file.js'
import { serveStatic, type StaticSite } from '../../ui/static-files.js'
import { UI_BUILD_HINT, uiAssetsDir } from '../../ui/ui-assets.js'
import { readBody, sendJson } from './admin-server.js'
import { createEventStreams, type AdminRoute, type EventStreamOptions } from './events.js'

/** Where the page is mounted on the admin server. */
export const DASHBOARD_PATH = '/dashboard'

export interface Dashboard {
  /** Routes served without the token: the static page only. */
  readonly publicRoutes: AdminRoute[]
  /** Routes behind the token: events and the rules editor. */
  readonly routes: AdminRoute[]
  /** End the open event streams (the proxy is closing). */
  close(): void
}

export interface DashboardOptions {
  /** Directory of the built page (default `dist/dashboard`). */
  readonly assetsDir?: string
  readonly events?: EventStreamOptions
  /** Hand edited rules to the other replicas first (`--state`: the shared store's `publishRules`). */
  readonly publishRules?: (config: StormConfig) => Promise<void>
}


function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b)

/**
 * The editor shows rules as reports hold them, redacted, and never shows the redaction settings.
 * So that saving an edited document loses nothing it could not show: a missing `redact` (or
 * `mcp`) keeps the settings in force, and a field of a same-named rule left at its redacted value keeps its
 * real value.
 */
export function restoreRedacted(document: unknown, storm: Storm): unknown {
  if (!isRecord(document)) return document
  const merged: Record<string, unknown> = { ...document }
  if (!('redact' in merged)) merged.redact = storm.config.redact
  // The editor does not show the MCP settings either (reports do not hold them): kept the same way.
  if (!('mcp' in merged)) merged.mcp = storm.config.mcp
  if (Array.isArray(merged.rules)) {
    const shown = new Map(storm.report(NO_RUN).rules.map((rule) => [rule.name, rule as Record<string, unknown>]))
    const real = new Map(storm.config.rules.map((rule) => [rule.name, rule as Record<string, unknown>]))
    merged.rules = merged.rules.map((rule: unknown) => {
      if (!isRecord(rule) || typeof rule.name !== 'string') return rule
      const display = shown.get(rule.name)
      const original = real.get(rule.name)
      if (!display || !original) return rule
      const out = { ...rule }
      for (const [field, value] of Object.entries(out)) {
        if (field in display && same(value, display[field]) && !same(display[field], original[field])) out[field] = original[field]
      }
      return out
    })
  }
  return merged
}

function parseBody(text: string, contentType: string): unknown {
  if (/yaml/i.test(contentType)) return parseDocument(text, 'the rules editor', { format: 'yaml' })
  try {
    return parseStrictJson(text, { maxDepth: 64 })
  } catch (error) {
    const detail = error instanceof StrictJsonError ? `line ${error.line}, column ${error.column}: ${error.message}` : String(error)
    throw new AdminApiError('ERR_JSON_INVALID', `Failed to read the rules editor’s text: the text is not valid JSON (${detail}). Fix it, or switch the editor to YAML.`)
  }
}

/** Build the dashboard's routes for one storm. */
export function createDashboard(storm: Storm, options: DashboardOptions = {}): Dashboard {
  const site: StaticSite = { root: options.assetsDir ?? uiAssetsDir('dashboard'), mount: DASHBOARD_PATH, missingHint: UI_BUILD_HINT }
  const events = createEventStreams(storm, options.events)

  const page: AdminRoute = (req, res, url) => serveStatic(site, req, res, url)

  const rules: AdminRoute = async (req: http.IncomingMessage, res: http.ServerResponse, url: URL) => {
    if (req.method !== 'PUT' || url.pathname !== `${DASHBOARD_PATH}/rules`) return false
    const document = restoreRedacted(parseBody(await readBody(req), req.headers['content-type'] ?? ''), storm)
    const config = parseConfig(document, 'the rules editor', storm.faults)
    await options.publishRules?.(config)
    storm.setConfig(config)
    sendJson(res, 200, { ok: true, rules: config.rules.length, warnings: lintRules(config, storm.plugins) })
    return true
  }

  return { publicRoutes: [page], routes: [events.route, rules], close: () => events.close() }
}
