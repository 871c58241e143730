/**
 * Route patterns in MSW's path syntax: `/inventory/:sku`, `/files/*`, `:param?` for an optional
 * segment, optionally with an origin (`http://api.test:8080/v1/*`). Matching ignores the query,
 * a trailing slash and letter case, as MSW does.
 *
 * @note MSW's own `matchRequestUrl` compiles its pattern on every call and needs a base URL for
 * relative paths; routes are matched on every proxied request, so they are compiled once here.
 * The unit test checks this matcher against `matchRequestUrl`.
 */

export interface RoutePattern {
  readonly method: string | null
  readonly origin: string | null
  readonly path: string
  readonly regexp: RegExp
}

const METHOD = /^[A-Za-z]+$|^\*$/

/** Parse `"POST /shipments"`, `"GET http://host/x/:id"` or `"* /health"`. Returns a reason on failure. */
export function parseRoutePattern(spec: string): RoutePattern | string {
  const match = /^(\S+)\s+(\S+)$/.exec(spec.trim())
  if (!match) return 'expected "METHOD /path" (for example "POST /shipments"), optionally with an origin'
  const [, rawMethod, target] = match as unknown as [string, string, string]
  if (!METHOD.test(rawMethod)) return `"${rawMethod}" is not an HTTP method (use a method name or "*")`
  const method = rawMethod === '*' || rawMethod.toUpperCase() === 'ALL' ? null : rawMethod.toUpperCase()
  let origin: string | null = null
  let path = target
  if (/^https?:\/\//i.test(target)) {
    let url: URL
    try {
      url = new URL(target.replace(/\*/g, '__STAR__'))
    } catch {
      return `"${target}" is not a valid URL`
    }
    origin = url.origin.toLowerCase()
    path = decodeURIComponent(url.pathname).replace(/__STAR__/g, '*')
  } else if (!target.startsWith('/')) {
    return `"${target}" must start with "/" or be an absolute http(s) URL`
  }
  return { method, origin, path, regexp: compilePath(path) }
}

function compilePath(path: string): RegExp {
  const trimmed = path.length > 1 ? path.replace(/\/+$/, '') : path
  let source = ''
  const segments = trimmed.split('/')
  segments.forEach((segment, index) => {
    if (index === 0) return
    const optional = /^:[A-Za-z0-9_]+\?$/.test(segment)
    if (optional) {
      source += '(?:/[^/]+)?'
      return
    }
    source += '/'
    let part = ''
    for (let i = 0; i < segment.length; i++) {
      const ch = segment[i] as string
      if (ch === '*') {
        part += '.*'
      } else if (ch === ':' && /[A-Za-z0-9_]/.test(segment[i + 1] ?? '')) {
        let j = i + 1
        while (j < segment.length && /[A-Za-z0-9_]/.test(segment[j] as string)) j++
        part += '[^/]+'
        i = j - 1
      } else {
        part += ch.replace(/[.+?^${}()|[\]\\]/g, '\\$&')
      }
    }
    source += part
  })
  if (source === '') source = ''
  return new RegExp(`^${source}/?$`, 'i')
}

/** Whether a request matches a compiled pattern. `pathname` is the raw path without the query. */
export function routePatternMatches(pattern: RoutePattern, method: string, origin: string, pathname: string): boolean {
  if (pattern.method !== null && pattern.method !== method.toUpperCase()) return false
  if (pattern.origin !== null && pattern.origin !== origin.toLowerCase()) return false
  let decoded = pathname
  try {
    decoded = decodeURIComponent(pathname)
  } catch {
    // Keep the raw path when it is not valid percent-encoding.
  }
  return pattern.regexp.test(decoded)
}
