import { http, HttpResponse } from 'msw'
import { setupServer } from 'msw/node'
import { describe, expect, it } from 'vitest'
import { createStorm } from '../../src/create-storm.js'
import { contract } from '../../src/contracts/contract.js'
import { stormHandlers } from '../../src/interceptors/msw-handlers.js'
import http_ from 'node:http'
import { intercept } from '../../src/interceptors/intercept.js'
import { startUpstream } from '../helpers/upstream.js'
import { closing } from '../helpers/teardown.js'

// Two cookies, one whose Expires holds a comma: joined with ", " they would read as three.
const COOKIES = ['session=abc; Path=/; Expires=Wed, 21 Oct 2037 07:28:00 GMT; HttpOnly', 'theme=dark; Path=/']

/** A real upstream on 127.0.0.1 that answers every request with two Set-Cookie fields. */
async function cookieUpstream(): Promise<{ origin: string; close: () => Promise<void> }> {
  const server = http_.createServer((_req, res) => {
    res.setHeader('set-cookie', COOKIES)
    res.setHeader('x-Mixed-Case', 'kept')
    res.end('ok')
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as import('node:net').AddressInfo
  return { origin: `http://127.0.0.1:${port}`, close: () => new Promise((resolve) => server.close(() => resolve())) }
}

describe('storm as MSW handlers', () => {
  it('passes through to a real upstream, which commits, then fails the client with a network error', async () => {
    const storm = createStorm({ rules: [{ name: 'lost', route: 'POST /ship', kind: 'response_lost', calls: [1] }] })
    const upstream = closing(await startUpstream({ onCommit: (name, key, req) => void storm.effect(name, key, { call: req.headers }) }))
    const origin = upstream.url
    const server = closing(setupServer(...stormHandlers(storm, { filter: (url) => url.origin === origin })))
    server.listen({ onUnhandledRequest: 'error' })
    await expect(fetch(`${origin}/ship`, { method: 'POST', body: '{"order":"o-1"}' })).rejects.toThrow(TypeError)
    expect((await fetch(`${origin}/ship`, { method: 'POST', body: '{"order":"o-1"}' })).status).toBe(201)
    expect(upstream.commits).toEqual(['o-1', 'o-1'])
    const result = contract(storm.report()).requireTriggered().noDuplicateEffects().toJSON()
    expect(result.checks.map((c) => c.passed)).toEqual([true, false])
  })

  it('uses MSW tool handlers as the upstream, where effect() needs no call id', async () => {
    const storm = createStorm({ rules: [{ name: 'busy', route: 'POST /ship', kind: 'rate_limit', calls: [1], delay: 1 }] })
    const tools = [
      http.post('https://tools.test/ship', () => {
        storm.effect('shipment', 'o-9')
        return HttpResponse.json({ id: 1 }, { status: 201 })
      }),
    ]
    const server = closing(setupServer(...stormHandlers(storm, { tools, filter: (url) => url.hostname === 'tools.test' })))
    server.listen({ onUnhandledRequest: 'error' })
    const first = await fetch('https://tools.test/ship', { method: 'POST' })
    expect(first.status).toBe(429)
    expect(first.headers.get('retry-after')).toBe('1')
    const second = await fetch('https://tools.test/ship', { method: 'POST' })
    expect(await second.json()).toEqual({ id: 1 })
    const report = storm.report()
    expect(report.effects).toEqual([{ name: 'shipment', key: 'o-9', call: 2, at: expect.any(Number), identity: 1, redacted: false }])
  })

  it('keeps each Set-Cookie of a relayed upstream response apart, with lowercase names', async () => {
    const cookies = await cookieUpstream()
    try {
      const storm = createStorm({ rules: [] })
      const server = closing(setupServer(...stormHandlers(storm, { filter: (url) => url.origin === cookies.origin })))
      server.listen({ onUnhandledRequest: 'error' })
      const response = await fetch(`${cookies.origin}/login`)
      expect(response.headers.getSetCookie()).toEqual(COOKIES)
      expect(response.headers.get('x-mixed-case')).toBe('kept')
      expect(await response.text()).toBe('ok')
    } finally {
      await cookies.close()
    }
  })

  it('keeps each Set-Cookie of a tool handler\'s answer apart', async () => {
    const storm = createStorm({ rules: [] })
    const tools = [
      http.get('https://tools.test/login', () => {
        const headers = new Headers()
        for (const cookie of COOKIES) headers.append('set-cookie', cookie)
        return new HttpResponse('ok', { headers })
      }),
    ]
    const server = closing(setupServer(...stormHandlers(storm, { tools, filter: (url) => url.hostname === 'tools.test' })))
    server.listen({ onUnhandledRequest: 'error' })
    const response = await fetch('https://tools.test/login')
    expect(response.headers.getSetCookie()).toEqual(COOKIES)
  })

  it('keeps each Set-Cookie apart through intercept() too', async () => {
    const cookies = await cookieUpstream()
    const interception = intercept(createStorm({ rules: [] }))
    try {
      const response = await fetch(`${cookies.origin}/login`)
      expect(response.headers.getSetCookie()).toEqual(COOKIES)
    } finally {
      interception.dispose()
      await cookies.close()
    }
  })

  it('leaves requests outside its filter to MSW onUnhandledRequest', async () => {
    const storm = createStorm()
    const server = closing(setupServer(...stormHandlers(storm, { filter: (url) => url.hostname === 'tools.test' })))
    server.listen({ onUnhandledRequest: 'error' })
    await expect(fetch('https://elsewhere.test/x')).rejects.toThrow()
    expect(storm.report().calls).toHaveLength(0)
  })
})
