/**
 * Which CONNECT targets the rules care about, for `tunnelUnmatched`: a host is intercepted when
 * some rule could apply to a request sent to it; any other host is tunnelled untouched.
 *
 * A rule whose route glob can match a default route name (`METHOD /path`, which carries no host),
 * a name one of the storm's plug-ins gives (MCP's `tools/call create_shipment`: its `checkRoute`)
 * or a declared route without an origin can apply to every host. Only a rule that matches
 * nothing but declared routes with an origin (`"GET https://api.openai.com/v1/*"`) is tied to
 * those hosts. When in doubt the answer is "every host": intercepting too much is visible and
 * harmless, tunnelling a host a rule targets would silently skip the fault.
 *
 * A call budget (`maxCalls`) counts every call to every host: with one set, every host is
 * intercepted (tunnelled calls are neither counted nor refused, and a budget over none passes).
 */
import { globMatches, isGlob } from '../../engine/glob.js'
import { parseRoutePattern } from '../../engine/route-pattern.js'
import type { StormConfig } from '../../engine/schema/config.js'
import type { RouteChecker } from '../../engine/protocol-hooks.js'

export type InterceptScope = { readonly everyHost: true } | { readonly everyHost: false; readonly hosts: ReadonlySet<string> }

/** Characters of an HTTP method token once upper-cased (RFC 9110 §5.6.2). */
const DEFAULT_NAME = /^[!#$%&'*+.^_`|~0-9A-Z-]+ \/[\s\S]*$/
const DEFAULT_NAME_PREFIX = /^(?:[!#$%&'*+.^_`|~0-9A-Z-]*|[!#$%&'*+.^_`|~0-9A-Z-]+ (?:\/[\s\S]*)?)$/

/** The hosts (`host:port`) the rules can apply to, or every host; `checkRoute`: the storm's plug-ins' (`storm.protocol.checkRoute`). */
export function interceptScope(config: Pick<StormConfig, 'rules' | 'routes' | 'maxCalls'>, checkRoute?: RouteChecker): InterceptScope {
  if (config.maxCalls !== null) return { everyHost: true }
  const hosts = new Set<string>()
  for (const rule of config.rules) {
    // The names plug-ins give (MCP's `tools/call create_shipment`) carry no host either.
    if (canMatchDefaultName(rule.route) || checkRoute?.(rule.route) === null) return { everyHost: true }
    for (const [name, spec] of Object.entries(config.routes)) {
      if (!globMatches(rule.route, name)) continue
      const pattern = parseRoutePattern(spec)
      if (typeof pattern === 'string' || pattern.origin === null) return { everyHost: true }
      hosts.add(hostKeyOfOrigin(pattern.origin))
    }
  }
  return { everyHost: false, hosts }
}

/** A predicate over CONNECT targets that follows live rule changes (recomputed when the config object changes). */
export function createInterceptPredicate(currentConfig: () => Pick<StormConfig, 'rules' | 'routes' | 'maxCalls'>, checkRoute?: RouteChecker): (host: string, port: number) => boolean {
  let config: unknown = null
  let scope: InterceptScope = { everyHost: true }
  return (host, port) => {
    const now = currentConfig()
    if (now !== config) {
      config = now
      scope = interceptScope(now, checkRoute)
    }
    return scope.everyHost || scope.hosts.has(`${host}:${port}`)
  }
}

/**
 * Whether a route glob can match a name the route table makes up for undeclared routes.
 * A literal is checked exactly; a glob by its literal prefix (conservative: a wildcard after a
 * plausible prefix counts as a match).
 */
function canMatchDefaultName(glob: string): boolean {
  if (!isGlob(glob)) return DEFAULT_NAME.test(glob)
  const prefix = glob.slice(0, glob.search(/[*?[]/))
  return DEFAULT_NAME_PREFIX.test(prefix)
}

function hostKeyOfOrigin(origin: string): string {
  const url = new URL(origin)
  const port = url.port || (url.protocol === 'https:' ? '443' : '80')
  return `${url.hostname.replace(/^\[|\]$/g, '')}:${port}`
}
