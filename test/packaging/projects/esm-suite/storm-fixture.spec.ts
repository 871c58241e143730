import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll } from 'vitest'
import { expect, test } from 'toolstorm/vitest'

let server: http.Server
let base = ''
beforeAll(async () => {
  server = http.createServer((_req, res) => res.end('{"ready":true}'))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())))

test('recovers from a one-time timeout', async ({ storm }) => {
  storm({ rules: [{ name: 'one-time', route: 'GET /read', kind: 'timeout', calls: [1] }] })
  expect((await fetch(`${base}/read`)).status).toBe(504)
  expect(await (await fetch(`${base}/read`)).json()).toEqual({ ready: true })
})

test('a rule on a misspelled route never triggers', async ({ storm }) => {
  storm({ rules: [{ name: 'typo', route: 'GET /raed', kind: 'timeout' }] })
  expect((await fetch(`${base}/read`)).status).toBe(200)
})

test('a probabilistic campaign opts out of the trigger check', async ({ storm }) => {
  storm({ rules: [{ name: 'maybe', route: 'GET /read', kind: 'timeout', probability: 0 }] }, { requireTriggered: false })
  expect((await fetch(`${base}/read`)).status).toBe(200)
})

test('each test gets an isolated storm', async ({ storm }) => {
  const s = storm({ rules: [{ name: 'first-call', route: 'GET /read', kind: 'unavailable', calls: [1] }] })
  expect((await fetch(`${base}/read`)).status).toBe(503)
  expect(s.report().calls).toHaveLength(1)
})
