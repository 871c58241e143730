// #30 items 1, 2 and 6 from the installed package: concurrent tests' storms see only their own
// traffic, the matchers, and a diverged in-process replay answered 422 with x-should-retry: false.
import http from 'node:http'
import { createStorm } from 'toolstorm'
import { Cassette, replayCassette } from 'toolstorm/cassette'
import { describe, expect, test } from 'toolstorm/vitest'
import { afterAll, beforeAll } from 'vitest'

let server
let base = ''
beforeAll(async () => {
  server = http.createServer((_req, res) => res.end('{"ready":true}'))
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  base = `http://127.0.0.1:${server.address().port}`
})
afterAll(() => new Promise((resolve) => server.close(() => resolve())))

/** Resolves once both concurrent tests have their storm: neither request is made before. */
let arrived = 0
let open
const opened = new Promise((resolve) => (open = resolve))
const ready = () => (++arrived === 2 && open(), opened)

describe.concurrent('two concurrent tests with the installed fixture', () => {
  test('concurrent: the first sees its own 429 only', async ({ storm }) => {
    const s = storm({ rules: [{ name: 'busy', route: 'GET /read', kind: 'rate_limit', calls: [1] }] })
    await ready()
    expect((await fetch(`${base}/read`)).status).toBe(429)
    expect((await fetch(`${base}/read`)).status).toBe(200)
    expect(s).toHaveTriggered('busy')
    expect(s).toHaveAtMostCalls(2)
  })

  test('concurrent: the second sees its own 503 only', async ({ storm }) => {
    const s = storm({ rules: [{ name: 'down', route: 'GET /read', kind: 'unavailable', calls: [1] }] })
    await ready()
    expect((await fetch(`${base}/read`)).status).toBe(503)
    expect((await fetch(`${base}/read`)).status).toBe(200)
    expect(s).toHaveNoDuplicateEffects()
    expect(s.report().calls.map((call) => call.status)).toEqual([503, 200])
  })
})

test('a diverged in-process replay is answered 422 with x-should-retry: false', async () => {
  // A cassette with nothing in it: any request is one too many.
  const cassette = Cassette.fromReport(createStorm().report())
  const replay = replayCassette(cassette)
  try {
    const response = await fetch(`${base}/not-recorded`)
    expect(response.status).toBe(422)
    expect(response.headers.get('x-should-retry')).toBe('false')
  } finally {
    replay.dispose()
  }
  expect(replay.verdict().passed).toBe(false)
})
