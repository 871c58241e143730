import { describe, expect, it } from 'vitest'
import { matchRequestUrl } from 'msw'
import { parseRoutePattern, routePatternMatches, type RoutePattern } from './route-pattern.js'

const cases: Array<[string, string]> = [
  ['/inventory/:sku', 'http://127.0.0.1:3000/inventory/CLOUD-01?x=1'],
  ['/inventory/:sku', 'http://127.0.0.1:3000/inventory/CLOUD-01/more'],
  ['/inventory/:sku', 'http://127.0.0.1:3000/inventory/'],
  ['/v1/*', 'http://api.test/v1/chat/completions'],
  ['/v1/*', 'http://api.test/v2/chat'],
  ['/shipments', 'http://api.test/shipments/'],
  ['/shipments', 'http://api.test/Shipments'],
  ['/shipments', 'http://api.test/shipments/1'],
  ['/users/:id/orders/:order', 'http://api.test/users/7/orders/9'],
  ['/users/:id?', 'http://api.test/users'],
  ['/users/:id?', 'http://api.test/users/3'],
  ['/', 'http://api.test/'],
  ['/files/*.json', 'http://api.test/files/a/b.json'],
  ['/files/*.json', 'http://api.test/files/a/b.txt'],
]

function pattern(spec: string): RoutePattern {
  const parsed = parseRoutePattern(spec)
  if (typeof parsed === 'string') throw new Error(parsed)
  return parsed
}

describe('route patterns', () => {
  it.each(cases)('matches %s against %s as MSW does', (path, href) => {
    const url = new URL(href)
    const expected = matchRequestUrl(url, path, url.origin).matches
    expect(routePatternMatches(pattern(`GET ${path}`), 'GET', url.origin, url.pathname)).toBe(expected)
  })

  it('filters by method unless the method is "*"', () => {
    expect(routePatternMatches(pattern('POST /shipments'), 'GET', 'http://a', '/shipments')).toBe(false)
    expect(routePatternMatches(pattern('post /shipments'), 'POST', 'http://a', '/shipments')).toBe(true)
    expect(routePatternMatches(pattern('* /shipments'), 'DELETE', 'http://a', '/shipments')).toBe(true)
  })

  it('filters by origin when the pattern names one', () => {
    const p = pattern('GET http://api.test:8080/v1/*')
    expect(routePatternMatches(p, 'GET', 'http://api.test:8080', '/v1/models')).toBe(true)
    expect(routePatternMatches(p, 'GET', 'http://api.test:8081', '/v1/models')).toBe(false)
  })

  it('explains what it expected when a spec is malformed', () => {
    expect(parseRoutePattern('/shipments')).toBe('expected "METHOD /path" (for example "POST /shipments"), optionally with an origin')
    expect(parseRoutePattern('POST shipments')).toBe('"shipments" must start with "/" or be an absolute http(s) URL')
    expect(parseRoutePattern('P0ST /x')).toBe('"P0ST" is not an HTTP method (use a method name or "*")')
  })
})
