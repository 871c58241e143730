/**
 * Rules that can never fire. A rule's `route` is a case-sensitive glob over route names, and a
 * request's route name is a declared route's name, a name a plug-in gives (MCP's `<method> <target>`,
 * checked by its `checkRoute`), else `METHOD /path` with the method in upper case (src/engine/routes.ts). A glob that can match neither is valid by the schema and silent at
 * run time: its rule stays at 0/0/0. These warnings say so when the rules are read, and what was
 * probably meant. They never reject the rules (a route may be declared later through the admin API).
 * The CLI and the admin API lint with their storm's plug-ins' route names known (users: the default
 * plug-ins', unless they pass theirs), so a rule on one (MCP's `tools/call create_shipment`) is not
 * taken for a typo.
 *
 * @example
 * lintRules(parseConfig({ routes: { create_shipment: 'POST /shipments' }, rules: [{ name: 'x', route: 'create_shipmnt', kind: 'reset' }] }))
 * // [{ rule: 'x', route: 'create_shipmnt', message: 'route "create_shipmnt" is not a declared route … Did you mean "create_shipment"?' }]
 * lintRules(parseConfig({ rules: [{ name: 'x', route: 'tools/cal create_shipment', kind: 'reset' }] }))
 * // [{ rule: 'x', route: 'tools/cal create_shipment', message: '… "tools/cal" is not an MCP method. Did you mean "tools/call create_shipment"?' }]
 */
import { stormPlugins } from '../create-storm.js'
import { closestName } from '../engine/closest-name.js'
import { globMatches, isGlob } from '../engine/glob.js'
import { parseRoutePattern, routePatternMatches, type RoutePattern } from '../engine/route-pattern.js'
import { RouteTable } from '../engine/routes.js'
import type { ExchangePlugin } from '../engine/plugin.js'
import { protocolHooksOf } from '../engine/protocol-hooks.js'
import type { StormConfig } from '../engine/schema/config.js'

export interface RuleWarning {
  /** The rule's name. */
  readonly rule: string
  /** Its `route`, as written. */
  readonly route: string
  /** Why it can never fire, and what to write instead. */
  readonly message: string
}

/** Declared route names listed in a message, at most. */
const LISTED_ROUTES = 8
/** Any origin a request could not have: declared routes with an origin never match it. */
const NO_ORIGIN = 'http://toolstorm.invalid'
/** A method token: no whitespace and, as resolved names carry it, no lower-case letter. */
const METHOD_TOKEN = /^[^\sa-z]+$/

/** One warning per rule whose route can match no route name, with `plugins`' names known (a storm's: `storm.plugins`). */
export function lintRules(config: Pick<StormConfig, 'routes' | 'rules'>, plugins: readonly ExchangePlugin[] = stormPlugins()): RuleWarning[] {
  const checkRoute = protocolHooksOf(plugins).checkRoute
  const declared = Object.keys(config.routes)
  const patterns = declared.flatMap((name) => {
    const pattern = parseRoutePattern(config.routes[name] as string)
    return typeof pattern === 'string' ? [] : [{ name, pattern }]
  })
  const table = new RouteTable(config.routes)
  const warnings: RuleWarning[] = []
  for (const rule of config.rules) {
    const route = rule.route
    if (declared.some((name) => globMatches(route, name))) continue
    // A plug-in's own route names (MCP: method and tool, docs/mcp.md).
    const judged = checkRoute?.(route)
    if (judged !== undefined) {
      if (judged !== null) warnings.push({ rule: rule.name, route, message: judged })
      continue
    }
    // `POST /ship?x=1` reads as a query, but `?` is a one-character wildcard and names carry none.
    const query = /^(\S+ \/[^?]*)\?[^?*[]*=/.exec(route)
    if (query) {
      warnings.push({ rule: rule.name, route, message: `route "${route}" can never match: route names carry no query string, and "?" in a glob stands for one character. Did you mean "${query[1]}"?` })
      continue
    }
    // A `METHOD /path` glob can fire: on undeclared requests, and on declared ones by their path.
    if (namesUnnamedRoute(route)) continue
    warnings.push({ rule: rule.name, route, message: whyNoMatch(route, declared, patterns, table) })
  }
  return warnings
}

/**
 * Rules that are not wrong but may surprise: a `METHOD /path` glob that matches the requests of a
 * declared route by their path, not by their name. Those requests keep the declared name (in
 * reports, for ordinals, `calls` and draws), which the note says. `toolstorm rules` prints them.
 */
export function ruleNotes(config: Pick<StormConfig, 'routes' | 'rules'>): RuleWarning[] {
  const notes: RuleWarning[] = []
  for (const rule of config.rules) {
    const byPath = Object.entries(config.routes).filter(([name, spec]) => {
      if (globMatches(rule.route, name)) return false
      const pattern = parseRoutePattern(spec)
      return typeof pattern !== 'string' && globMatches(rule.route, samplePathName(pattern, rule.route))
    })
    if (byPath.length === 0) continue
    const named = byPath.slice(0, LISTED_ROUTES).map(([name, spec]) => `"${name}" (${spec})`).join(', ')
    notes.push({ rule: rule.name, route: rule.route, message: `route "${rule.route}" matches the requests of ${named} by their path: those calls are named after the declared route, and "calls" counts its ordinals.` })
  }
  return notes
}

/** A `METHOD /path` name one request of a declared route would have (parameters and `*` as one segment). */
function samplePathName(pattern: RoutePattern, glob: string): string {
  const method = pattern.method ?? /^([A-Z]+) /.exec(glob)?.[1] ?? 'GET'
  const path = pattern.path.replace(/\/:[^/]+\?/g, '').replace(/:[^/]+/g, 'x').replace(/\*/g, 'x')
  return `${method} ${path || '/'}`
}

/** `rule "x": <message>`, one line per warning. */
export function formatRuleWarning(warning: RuleWarning): string {
  return `rule "${warning.rule}": ${warning.message}`
}

/**
 * Whether the glob can match some `METHOD /path` name: its literal text before the first wildcard
 * must read as the start of one, and it may hold no more than that one space.
 */
function namesUnnamedRoute(glob: string): boolean {
  if (/[\t\n\r\f\v]/.test(glob) || (glob.match(/ /g)?.length ?? 0) > 1) return false
  const wildcard = glob.search(/[*?[]/)
  const literal = wildcard === -1 ? glob : glob.slice(0, wildcard)
  const space = literal.indexOf(' ')
  if (wildcard === -1) return space > 0 && METHOD_TOKEN.test(literal.slice(0, space)) && literal[space + 1] === '/'
  if (space === -1) return !literal.includes('/') && (literal === '' || METHOD_TOKEN.test(literal))
  const rest = literal.slice(space + 1)
  return space > 0 && METHOD_TOKEN.test(literal.slice(0, space)) && (rest === '' || rest.startsWith('/'))
}

/** The declared route that names requests to a literal `METHOD /path`, if one does. */
function declaredNameOf(route: string, table: RouteTable): string | null {
  if (isGlob(route)) return null
  const [method, path] = route.split(' ') as [string, string]
  let url: URL
  try {
    url = new URL(path, NO_ORIGIN)
  } catch {
    return null
  }
  const name = table.resolve(method, url)
  return name === route ? null : name
}

/** Why a glob that matches no declared name cannot name an undeclared route either, with a suggestion. */
function whyNoMatch(route: string, declared: readonly string[], patterns: ReadonlyArray<{ name: string; pattern: RoutePattern }>, table: RouteTable): string {
  const closest = closestName(route, declared)
  if (closest) return `route "${route}" is not a declared route, nor "METHOD /path", so the rule can never fire. Did you mean "${closest}"?`
  const shape = /^(\S+)\s+(\S+)$/.exec(route.trim())
  if (shape) {
    const [, method, target] = shape as unknown as [string, string, string]
    if (/^https?:\/\//i.test(target)) return `route "${route}" can never match: route names carry no origin. Declare the route in "routes" (origins are allowed there) and use its name.`
    if (/[a-z]/.test(method) && !method.includes('[')) {
      const upper = `${method.toUpperCase()} ${target}`
      return `route "${route}" can never match: route names carry the method in upper case, and globs are case-sensitive. Did you mean "${declaredNameOf(upper, table) ?? upper}"?`
    }
    if (route !== `${method} ${target}`) return `route "${route}" can never match: a route name has one space between the method and the path. Did you mean "${method} ${target}"?`
    if (!/^[/*?[]/.test(target)) return `route "${route}" can never match: the path of a route name starts with "/". Did you mean "${method} /${target}"?`
  }
  if (route.startsWith('/')) {
    const owner = patterns.find(({ pattern }) => routePatternMatches(pattern, pattern.method ?? 'GET', NO_ORIGIN, route))
    const hint = owner ? `"${owner.name}" (${owner.pattern.method ?? '*'} ${owner.pattern.path})` : `"POST ${route}", or "* ${route}" for any method`
    return `route "${route}" can never match: a route name is a declared route or "METHOD /path", with the method. Did you mean ${hint}?`
  }
  const listed = declared.length ? `declared routes: ${declared.slice(0, LISTED_ROUTES).join(', ')}${declared.length > LISTED_ROUTES ? `, … (${declared.length} in all)` : ''}` : 'no routes are declared'
  return `route "${route}" can never match: it is not a declared route (${listed}), nor "METHOD /path" (for example "POST /shipments").`
}

