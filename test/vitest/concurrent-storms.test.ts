/**
 * `test.concurrent` with the fixture: each test's storm sees only the traffic of its test (fetch
 * and node:http), and a request no test owns is refused with ERR_INTERCEPT_AMBIGUOUS instead of
 * taking another test's fault. `intercept()` on its own keeps its stack.
 */
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createStorm } from '../../src/create-storm.js'
import { intercept } from '../../src/interceptors/intercept.js'
import { test } from '../../src/vitest/index.js'

let upstream: http.Server
let relay: http.Server
let base = ''
let relayBase = ''
beforeAll(async () => {
  upstream = http.createServer((_req, res) => res.end('{"ready":true}'))
  // A tool server started before the tests: its own outbound call is made outside every test's task.
  relay = http.createServer((_req, res) => {
    void fetch(`${base}/read`).then(async (inner) => {
      res.writeHead(inner.status, { 'content-type': 'application/json', 'x-should-retry': inner.headers.get('x-should-retry') ?? 'absent' })
      res.end(await inner.text())
    })
  })
  await Promise.all([upstream, relay].map((server) => new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))))
  base = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`
  relayBase = `http://127.0.0.1:${(relay.address() as AddressInfo).port}`
})
afterAll(async () => {
  await Promise.all([upstream, relay].map((server) => new Promise<void>((resolve) => server.close(() => resolve()))))
})

/** Resolves once `count` tasks arrived: every storm is active before any request is made. */
function barrier(count: number): () => Promise<void> {
  let arrived = 0
  let open!: () => void
  const opened = new Promise<void>((resolve) => (open = resolve))
  return () => {
    if (++arrived === count) open()
    return opened
  }
}

function httpGet(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    http
      .get(url, (res) => {
        res.resume()
        res.on('end', () => resolve(res.statusCode ?? 0))
      })
      .on('error', reject)
  })
}

describe.concurrent('two concurrent tests with the fixture', () => {
  const ready = barrier(2)

  test('the first sees its own 429 and only its own calls', async ({ storm }) => {
    const s = storm({ rules: [{ name: 'busy', route: 'GET /read', kind: 'rate_limit', calls: [1] }] })
    await ready()
    expect((await fetch(`${base}/read`)).status).toBe(429)
    expect(await httpGet(`${base}/read`)).toBe(200)
    expect(s.report().calls.map((call) => call.status)).toEqual([429, 200])
  })

  test('the second sees its own 503 and only its own calls', async ({ storm }) => {
    const s = storm({ rules: [{ name: 'down', route: 'GET /read', kind: 'unavailable', calls: [1] }] })
    await ready()
    expect(await httpGet(`${base}/read`)).toBe(503)
    expect((await fetch(`${base}/read`)).status).toBe(200)
    expect(s.report().calls.map((call) => call.status)).toEqual([503, 200])
  })
})

describe.concurrent('a request no concurrent test owns', () => {
  const ready = barrier(2)
  for (const name of ['first', 'second']) {
    test(`is refused with ERR_INTERCEPT_AMBIGUOUS, not given to another test (${name})`, async ({ storm }) => {
      const s = storm({ rules: [] })
      await ready()
      const answer = await fetch(`${relayBase}/relay`)
      expect(answer.status).toBe(421)
      expect(answer.headers.get('x-should-retry')).toBe('false')
      const body = (await answer.json()) as { error: { code: string; message: string } }
      expect(body.error.code).toBe('ERR_INTERCEPT_AMBIGUOUS')
      // The other describe's concurrent tests may be running too: at least this one's pair is active.
      expect(body.error.message).toMatch(/^\[toolstorm\] Failed to route "GET http:\/\/127\.0\.0\.1:\d+\/read" in-process: [2-4] interceptions of separate async tasks are active/)
      // The test's own call to the relay is its storm's; the relay's call is nobody's.
      expect(s.report().calls.map((call) => call.url)).toEqual([`${relayBase}/relay`])
    })
  }
})

describe('intercept() outside the fixture', () => {
  it('keeps its stack: a nested interception answers, then the outer one again once it is disposed', async () => {
    const outer = createStorm({ rules: [{ name: 'outer', route: 'GET /read', kind: 'unavailable' }] })
    const outerInterception = intercept(outer)
    try {
      // Created in a helper after an await: no async scope reaches the caller, the stack decides.
      const inner = createStorm({ rules: [{ name: 'inner', route: 'GET /read', kind: 'rate_limit' }] })
      const innerInterception = await (async () => {
        await new Promise((resolve) => setImmediate(resolve))
        return intercept(inner)
      })()
      expect((await fetch(`${base}/read`)).status).toBe(429)
      expect(await httpGet(`${base}/read`)).toBe(429)
      innerInterception.dispose()
      expect((await fetch(`${base}/read`)).status).toBe(503)
      expect([inner.report().calls.length, outer.report().calls.length]).toEqual([2, 1])
    } finally {
      outerInterception.dispose()
    }
    expect((await fetch(`${base}/read`)).status).toBe(200)
  })
})
