import type { Socket } from 'node:net'
import { describe, expect, it } from 'vitest'
import { WireRequest } from './http1/wire-request.js'
import { RequestRouter } from './request-router.js'
import { parseTargets } from './targets.js'

const request = (url: string, host = '127.0.0.1:8787') => new WireRequest('GET', url, { host }, '1.1', null as unknown as Socket, null)

function router(targets: string[], routesItself = false): RequestRouter {
  const made = new RequestRouter(parseTargets(targets), '127.0.0.1', { routesItself, selfName: 'proxy' })
  made.listening('127.0.0.1:8787', 8787, 8788)
  return made
}

describe('RequestRouter', () => {
  it('serves a request addressed to its own data plane as the origin-form request it stands for, when a target routes it', () => {
    expect(router(['http://up.test:4000/base']).route(request('http://localhost:8787/items/a?x=1'))).toMatchObject({
      type: 'serve',
      upstream: { origin: 'http://up.test:4000', path: '/base/items/a?x=1' },
      rawUrl: '/items/a?x=1',
    })
  })

  it('hands it to a source that routes itself with no upstream, matched by its path', () => {
    const route = router([], true).route(request('http://127.0.0.1:8787/items/a'))
    expect(route).toMatchObject({ type: 'serve', upstream: null, rawUrl: '/items/a' })
  })

  it('refuses with 508 what would really loop: the admin port, a forward proxy\'s own data plane, a target that is itself', () => {
    expect(router(['http://up.test']).route(request('http://127.0.0.1:8788/report'))).toMatchObject({ type: 'refuse', status: 508 })
    expect(router([]).route(request('http://127.0.0.1:8787/items/a'))).toMatchObject({ type: 'refuse', status: 508 })
    expect(router(['http://localhost:8787']).route(request('/items/a'))).toMatchObject({ type: 'refuse', status: 508 })
  })

  it('opens tunnels to its own data plane only where origin-form requests are routed', () => {
    expect(router(['http://up.test']).tunnelsHere('127.0.0.1:8787')).toBe(true)
    expect(router([], true).tunnelsHere('localhost:8787')).toBe(true)
    expect(router([]).tunnelsHere('127.0.0.1:8787')).toBe(false)
    expect(router(['http://up.test']).tunnelsHere('127.0.0.1:8788')).toBe(false)
    expect(router(['http://up.test']).tunnelsHere('example.com:8787')).toBe(false)
  })
})
