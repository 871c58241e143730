/**
 * Routes are the tools. A request's route name is the first declared route it matches, else
 * `METHOD /path` (no query, no origin). Ordinals count per route name.
 */
import { ConfigError } from '../errors.js'
import { parseRoutePattern, routePatternMatches, type RoutePattern } from './route-pattern.js'

export class RouteTable {
  readonly #routes: Array<{ name: string; pattern: RoutePattern }>

  constructor(routes: Readonly<Record<string, string>>) {
    this.#routes = Object.entries(routes).map(([name, spec]) => {
      const pattern = parseRoutePattern(spec)
      if (typeof pattern === 'string') throw new ConfigError(`Failed to load the routes: route "${name}" ("${spec}"): ${pattern}. Fix the route's pattern.`)
      return { name, pattern }
    })
  }

  /** The route name for a request: the first declared route it matches, else `named` (its path name). */
  resolve(method: string, url: URL, named: (method: string, url: URL) => string = pathName): string {
    for (const { name, pattern } of this.#routes) {
      if (routePatternMatches(pattern, method, url.origin, url.pathname)) return name
    }
    return named(method, url)
  }
}

/**
 * The name a request has when no declared route names it: `METHOD /path`. Rule globs match it as
 * well as a declared name (`GET /inventory/*` fires on `check_inventory`'s requests), since rules
 * are written against paths as often as against names.
 */
export function pathName(method: string, url: URL): string {
  return `${method.toUpperCase()} ${url.pathname}`
}
