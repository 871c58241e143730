import { describe, expect, it } from 'vitest'
import { parseTargets, resolveTarget } from './targets.js'

describe('targets', () => {
  it('resolves an unnamed target with its base path', () => {
    const targets = parseTargets(['http://up.test:4000/api/'])
    expect(resolveTarget(targets, '/v1/items?x=1', 'proxy:8787', 'proxy:8787')).toMatchObject({
      ok: true,
      upstream: { origin: 'http://up.test:4000', host: 'up.test:4000', path: '/api/v1/items?x=1' },
    })
  })

  it('mounts named targets under their name and strips the prefix', () => {
    const targets = parseTargets(['shop=http://shop.test', 'llm=https://llm.test/v1'])
    expect(resolveTarget(targets, '/shop/orders/7', 'p', 'p')).toMatchObject({ ok: true, upstream: { origin: 'http://shop.test', path: '/orders/7' } })
    expect(resolveTarget(targets, '/llm/chat?stream=1', 'p', 'p')).toMatchObject({ ok: true, upstream: { origin: 'https://llm.test', path: '/v1/chat?stream=1' } })
    expect(resolveTarget(targets, '/shopping', 'p', 'p')).toMatchObject({ ok: false, status: 404 })
  })

  it('names the client URL by each request\'s own Host, and refuses a malformed one every time (origins are cached, failures never)', () => {
    const targets = parseTargets(['http://up.test:4000'])
    for (let round = 0; round < 2; round++) {
      expect(resolveTarget(targets, '/a', 'one.test:1', 'p').ok && (resolveTarget(targets, '/a', 'one.test:1', 'p') as { clientUrl: URL }).clientUrl.href).toBe('http://one.test:1/a')
      expect((resolveTarget(targets, '/b?x', 'TWO.test', 'p') as { clientUrl: URL }).clientUrl.href).toBe('http://two.test/b?x')
      expect(() => resolveTarget(targets, '/a', 'a b', 'p')).toThrow()
      expect(() => resolveTarget(targets, '/a', 'x:99999', 'p')).toThrow()
    }
  })

  it('forwards absolute-form requests in forward mode and explains origin-form ones', () => {
    expect(resolveTarget([], 'http://api.test:81/x?y', undefined, 'p')).toMatchObject({ ok: true, upstream: { origin: 'http://api.test:81', path: '/x?y' } })
    expect(resolveTarget([], '/x', 'p', 'p')).toMatchObject({ ok: false, status: 400 })
  })

  it.each([
    ['not a url', 'Failed to use --target not a url: "not a url" is not a URL. Expected http(s)://host:port, optionally name=URL.'],
    ['ftp://x.test', 'Failed to use --target ftp://x.test: only http and https targets are supported.'],
    ['http://user:pw@x.test', 'Failed to use --target http://user:pw@x.test: put credentials in headers, not in the target URL.'],
    ['bad name!=http://x.test', 'Failed to use --target bad name!=http://x.test: the name "bad name!" must be letters, digits, ".", "_" or "-".'],
  ])('refuses --target %s with what it expected', (value, message) => {
    expect(() => parseTargets([value])).toThrow(message)
  })

  it('refuses two unnamed targets and duplicate names', () => {
    expect(() => parseTargets(['http://a.test', 'http://b.test'])).toThrow('only one target may be unnamed')
    expect(() => parseTargets(['a=http://a.test', 'a=http://b.test'])).toThrow('the name "a" is used twice')
  })
})
