import { http, HttpResponse } from 'msw'
import { setupServer } from 'msw/node'
import { afterEach, describe, expect, it } from 'vitest'
import { createStorm } from '../../src/engine/storm.js'
import { contract } from '../../src/engine/contracts/contract.js'
import { stormHandlers } from '../../src/interceptors/msw-handlers.js'
import { startUpstream, type Upstream } from '../helpers/upstream.js'

let server: ReturnType<typeof setupServer> | null = null
let upstream: Upstream | null = null
afterEach(async () => {
  server?.close()
  server = null
  await upstream?.close()
  upstream = null
})

describe('storm as MSW handlers', () => {
  it('passes through to a real upstream, which commits, then fails the client with a network error', async () => {
    const storm = createStorm({ rules: [{ name: 'lost', route: 'POST /ship', kind: 'response_lost', calls: [1] }] })
    upstream = await startUpstream({ onCommit: (name, key, req) => void storm.effect(name, key, { call: req.headers }) })
    const origin = upstream.url
    server = setupServer(...stormHandlers(storm, { filter: (url) => url.origin === origin }))
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
    server = setupServer(...stormHandlers(storm, { tools, filter: (url) => url.hostname === 'tools.test' }))
    server.listen({ onUnhandledRequest: 'error' })
    const first = await fetch('https://tools.test/ship', { method: 'POST' })
    expect(first.status).toBe(429)
    expect(first.headers.get('retry-after')).toBe('1')
    const second = await fetch('https://tools.test/ship', { method: 'POST' })
    expect(await second.json()).toEqual({ id: 1 })
    const report = storm.report()
    expect(report.effects).toEqual([{ name: 'shipment', key: 'o-9', call: 2, at: expect.any(Number), identity: 1, redacted: false }])
  })

  it('leaves requests outside its filter to MSW onUnhandledRequest', async () => {
    const storm = createStorm()
    server = setupServer(...stormHandlers(storm, { filter: (url) => url.hostname === 'tools.test' }))
    server.listen({ onUnhandledRequest: 'error' })
    await expect(fetch('https://elsewhere.test/x')).rejects.toThrow()
    expect(storm.report().calls).toHaveLength(0)
  })
})
