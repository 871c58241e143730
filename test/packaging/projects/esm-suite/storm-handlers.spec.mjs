// A plain-JS msw suite, as a user of the installed package writes it (no `using`: try/finally).
import { http, HttpResponse } from 'msw'
import { setupServer } from 'msw/node'
import { createStorm } from 'toolstorm'
import { intercept, stormHandlers } from 'toolstorm/interceptors'
import { createRequire } from 'node:module'
import nodeHttp from 'node:http'
import { expect, test } from 'vitest'

test('stormHandlers in setupServer match, fire the fault, then reach the tool handler', async () => {
  const storm = createStorm({ rules: [{ name: 'busy', route: 'POST /ship', kind: 'rate_limit', calls: [1], delay: 1 }] })
  const tools = [
    http.post('https://tools.test/ship', () => {
      storm.effect('shipment', 'o-1')
      return HttpResponse.json({ id: 1 }, { status: 201 })
    }),
  ]
  const server = setupServer(...stormHandlers(storm, { tools }))
  server.listen({ onUnhandledRequest: 'error' })
  try {
    const first = await fetch('https://tools.test/ship', { method: 'POST' })
    expect(first.status).toBe(429)
    expect(first.headers.get('retry-after')).toBe('1')
    const second = await fetch('https://tools.test/ship', { method: 'POST' })
    expect(second.status).toBe(201)
    expect(await second.json()).toEqual({ id: 1 })
  } finally {
    server.close() // msw 3 disposes every handler here
  }
  const report = storm.report()
  expect(report.calls.map((c) => c.status)).toEqual([429, 201])
  expect(report.effects.map((e) => [e.key, e.call])).toEqual([['o-1', 2]])
})

test('toolstorm uses the project msw: no copy of its own', () => {
  const require = createRequire(import.meta.url)
  const own = require.resolve('msw/package.json')
  const fromToolstorm = createRequire(require.resolve('toolstorm/package.json')).resolve('msw/package.json')
  expect(fromToolstorm).toBe(own)
})

test('intercept() still works after an msw server closed', async () => {
  const upstream = nodeHttp.createServer((_req, res) => res.end('{"ok":true}'))
  await new Promise((resolve) => upstream.listen(0, '127.0.0.1', resolve))
  const base = `http://127.0.0.1:${upstream.address().port}`
  const server = setupServer(http.get('https://elsewhere.test/', () => HttpResponse.text('msw')))
  server.listen({ onUnhandledRequest: 'bypass' })
  server.close()
  const interception = intercept(createStorm({ rules: [{ name: 'down', route: 'GET /x', kind: 'unavailable', calls: [1] }] }))
  try {
    expect((await fetch(`${base}/x`)).status).toBe(503)
    expect(await (await fetch(`${base}/x`)).json()).toEqual({ ok: true })
  } finally {
    interception.dispose()
    await new Promise((resolve) => upstream.close(resolve))
  }
})

test('every entry point loads with require(), the same module instance as import', async () => {
  const require = createRequire(import.meta.url)
  for (const entry of ['toolstorm', 'toolstorm/interceptors', 'toolstorm/effects', 'toolstorm/proxy', 'toolstorm/cassette', 'toolstorm/extend', 'toolstorm/vitest']) {
    expect(Object.keys(require(entry)).length, entry).toBeGreaterThan(0)
  }
  expect(require('toolstorm/interceptors').stormHandlers).toBe(stormHandlers)
  expect(require('toolstorm/package.json').name).toBe('toolstorm')
})
