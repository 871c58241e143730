import { describe, expect, it } from 'vitest'
import { ConfigError } from '../errors.js'
import { RouteTable } from './routes.js'

describe('RouteTable', () => {
  it('names a request by the first declared route it matches, else METHOD /path', () => {
    const routes = new RouteTable({ ship: 'POST /ship/:id', any: '* /ship/*' })
    expect(routes.resolve('post', new URL('http://t.test/ship/7?x=1'))).toBe('ship')
    expect(routes.resolve('GET', new URL('http://t.test/ship/7'))).toBe('any')
    expect(routes.resolve('get', new URL('http://t.test/other'))).toBe('GET /other')
  })

  it('refuses an invalid pattern with ERR_CONFIG_INVALID, naming the route and what was wrong', () => {
    expect(() => new RouteTable({ ship: 'POST ship' })).toThrow(ConfigError)
    expect(() => new RouteTable({ ship: 'POST ship' })).toThrow(
      expect.objectContaining({
        code: 'ERR_CONFIG_INVALID',
        message: 'Failed to load the routes: route "ship" ("POST ship"): "ship" must start with "/" or be an absolute http(s) URL. Fix the route\'s pattern.',
      }),
    )
  })
})
