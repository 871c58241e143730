/**
 * Replay is the proxy with a cassette source (issue #16): `startProxy({ source: replaySource(c) })`
 * serves a cassette with no upstream, and what works in the proxy works in replay because it is
 * the same code: rules and their faults (before the cassette is asked, and on a replayed stream),
 * runs and their reports, the dashboard.
 */
import { describe, expect, it } from 'vitest'
import { Cassette } from '../../src/cassette/format/cassette.js'
import { replaySource } from '../../src/cassette/replay/replay-source.js'
import { startReplayServer } from '../../src/proxy/replay/replay-server.js'
import { createStorm } from '../../src/create-storm.js'
import { startProxy } from '../../src/proxy/proxy-server.js'
import { exchangeAt } from '../helpers/cassette-fixtures.js'
import { closing } from '../helpers/teardown.js'

const EVENTS = ['data: {"n":1}\n\n', 'data: {"n":2}\n\n', 'data: {"n":3}\n\n', 'data: [DONE]\n\n']

function items(): Cassette {
  return Cassette.from({}, [exchangeAt(1), exchangeAt(2)])
}

/** One recorded event stream at GET /ticks, complete, 50 ms between events. */
function ticks(): Cassette {
  const data = EVENTS.join('')
  return Cassette.from({}, [
    exchangeAt(1, {
      route: 'GET /ticks',
      request: { method: 'GET', url: '/ticks', headers: {}, body: null },
      response: {
        status: 200,
        headers: { 'content-type': 'text/event-stream' },
        body: { encoding: 'utf8', data, size: data.length, truncated: false },
        stream: { events: EVENTS.map((event, index) => ({ at: index * 0.05, bytes: event.length })), end: 0.2 },
      },
    }),
  ])
}

async function adminJson(server: { adminUrl: string; token: string }, path: string): Promise<any> {
  const response = await fetch(`${server.adminUrl}${path}`, { headers: { authorization: `Bearer ${server.token}` } })
  expect(response.status).toBe(200)
  return response.json()
}

describe('a proxy with a cassette source', () => {
  it('serves the cassette with no upstream behind it, and the verdict passes', async () => {
    const source = replaySource(items())
    const proxy = closing(await startProxy({ source }))
    expect(proxy.source.kind).toBe('cassette')
    for (const id of [1, 2]) {
      const response = await fetch(`${proxy.url}/items/${id}`)
      expect(response.status).toBe(200)
      expect(await response.json()).toEqual({ id })
    }
    expect(source.session.verdict()).toMatchObject({ passed: true, served: 2, unused: 0 })
  })

  it('applies a rule before the cassette is asked, and the retry gets the position the faulted call left free', async () => {
    const storm = createStorm({ rules: [{ name: 'busy', route: 'GET /items/1', kind: 'rate_limit', calls: [1], delay: 1 }] })
    const replay = closing(await startReplayServer(items(), { storm }))
    const first = await fetch(`${replay.url}/items/1`)
    expect(first.status).toBe(429)
    expect(first.headers.get('retry-after')).toBe('1')
    for (const id of [1, 2]) expect(await (await fetch(`${replay.url}/items/${id}`)).json()).toEqual({ id })
    expect(replay.verdict()).toMatchObject({ passed: true, served: 2, unused: 0 })
    expect(storm.report().calls.map((call) => [call.route, call.ordinal, call.status, call.injected])).toEqual([
      ['GET /items/1', 1, 429, true],
      ['GET /items/1', 2, 200, false],
      ['GET /items/2', 1, 200, false],
    ])
  })

  it('cuts a replayed event stream with a stream_cut rule, as the proxy cuts a live one', async () => {
    const storm = createStorm({ rules: [{ name: 'cut', route: 'GET /ticks', kind: 'stream_cut', after: 2 }] })
    const replay = closing(await startReplayServer(ticks(), { storm }))
    const response = await fetch(`${replay.url}/ticks`)
    expect(response.headers.get('content-type')).toBe('text/event-stream')
    const error = await response.text().then(
      () => null,
      (reason: Error) => reason,
    )
    expect(error?.message).toBe('terminated')
    expect(storm.report().calls[0]).toMatchObject({ kind: 'stream_cut', injected: true, error: 'STREAM_CUT', cut: { events: 2 } })
    expect(replay.verdict().passed).toBe(true)
  })

  it('plays a recorded stream whole when no rule applies, and the run report names the call', async () => {
    const replay = closing(await startReplayServer(ticks(), { speed: 'recorded' }))
    const started = performance.now()
    const text = await (await fetch(`${replay.url}/ticks`)).text()
    expect(text).toBe(EVENTS.join(''))
    expect(performance.now() - started).toBeGreaterThanOrEqual(150 - 15)
    // The proxy's own admin routes: the run's report (what the dashboard exports) and the replay's.
    const run = await adminJson(replay, '/report?run=default')
    expect(run.calls).toMatchObject([{ route: 'GET /ticks', status: 200, outcome: 'response' }])
    expect(await adminJson(replay, '/verdict')).toMatchObject({ passed: true, served: 1 })
    expect(replay.proxy.dashboardUrl).not.toBeNull()
    expect((await fetch(replay.proxy.dashboardUrl!)).status).toBe(200)
  })
})
