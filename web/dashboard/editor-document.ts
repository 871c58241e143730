/** The rules file the editor starts from: the report's rules, without the fields left at their defaults. */
import type { Report } from '../../src/engine/schema/report.js'

/** Defaults every rule has; left out of the editor so the rules read as written. */
const RULE_DEFAULTS: Readonly<Record<string, unknown>> = { calls: [], probability: 1, limit: null, delay: 0, replacement: null }

export function editorDocument(meta: Pick<Report, 'seed' | 'maxCalls' | 'routes' | 'rules'>): Record<string, unknown> {
  const rules = meta.rules.map((rule) => Object.fromEntries(Object.entries(rule).filter(([key, value]) => !(key in RULE_DEFAULTS) || JSON.stringify(value) !== JSON.stringify(RULE_DEFAULTS[key]))))
  return { seed: meta.seed, maxCalls: meta.maxCalls, routes: meta.routes, rules }
}
