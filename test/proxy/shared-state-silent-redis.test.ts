/**
 * A Redis that is connected but does not answer (paused with `CLIENT PAUSE`, as a frozen host or
 * a long fork would leave it) counts as unreachable within the documented bound (2 s), on every
 * path that needs it: an exchange is answered 503 (or passed with --state-unavailable=pass) and
 * counted, the admin API answers 503, and recording counts the line it could not store (#29).
 * node-redis clears a command's own timeout once the command is written, so the bound is ours.
 */
import { createClient } from 'redis'
import { describe, expect, it } from 'vitest'
import type { Report } from '../../src/engine/schema/report.js'
import type { StormConfigInput } from '../../src/engine/schema/config.js'
import { startProxy, type ProxyOptions, type ProxyServer } from '../../src/proxy/proxy-server.js'
import { createCassetteRecorder } from '../../src/cassette/record/cassette-recorder.js'
import { connectRedisState } from '../../src/state/redis-run-state.js'
import { createStorm } from '../../src/create-storm.js'
import { hasRedis } from '../helpers/redis-server.js'
import { useReplicaSetting } from '../helpers/replicas.js'
import { closing } from '../helpers/teardown.js'

/** The documented bound, plus what a loaded 2-core machine adds (the pause lasts much longer). */
const BOUND_MS = 2000
const SLACK_MS = 1200
const PAUSE_MS = 6000

const setting = useReplicaSetting()

async function replica(extra: Partial<ProxyOptions> = {}, config: StormConfigInput = { rules: [] }): Promise<ProxyServer> {
  return closing(await startProxy({ targets: [setting.upstream!.url], config, state: { url: setting.redis!.url, prefix: 'silent' }, ...extra }))
}

function admin(proxy: ProxyServer, path: string, init: RequestInit = {}): Promise<Response> {
  return fetch(proxy.adminUrl + path, { ...init, headers: { authorization: `Bearer ${proxy.token}`, ...(init.headers as Record<string, string>) } })
}

/** Pause every client of the test's Redis for `ms` (the connection stays open; nothing is answered). */
async function pauseRedis(ms: number): Promise<() => Promise<void>> {
  const client = createClient({ url: setting.redis!.url })
  client.on('error', () => undefined)
  await client.connect()
  await client.sendCommand(['CLIENT', 'PAUSE', String(ms), 'ALL'])
  const resumed = Date.now() + ms
  // Resolves once the pause is over and Redis answers again.
  return async () => {
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, resumed - Date.now())))
    await client.sendCommand(['PING'])
    await client.close()
  }
}

/** Wait until the run's first `count` calls are written to the store (none listed as running). */
async function finishedInStore(proxy: ProxyServer, run: string, count: number): Promise<void> {
  let report: Report | undefined
  for (let attempt = 0; attempt < 100; attempt++) {
    report = (await (await admin(proxy, `/report?run=${run}`)).json()) as Report
    if (report.calls.length >= count && report.calls.every((call) => call.outcome !== 'running')) return
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  expect.fail(`the run's ${count} call(s) were not written to the store: ${JSON.stringify(report?.calls)}`)
}

async function timed<T>(work: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const started = performance.now()
  const value = await work()
  return { value, ms: performance.now() - started }
}

describe.skipIf(!hasRedis)('a connected but silent Redis', () => {
  it('answers an exchange 503 ERR_STATE_UNAVAILABLE within the bound, forwards nothing, and counts it', async () => {
    const proxy = await replica()
    expect((await fetch(`${proxy.url}/items/a`, { headers: { 'x-toolstorm-run': 'paused' } })).status).toBe(200)
    // The call is written to Redis after its answer: wait until it is, or the pause would meet it (and count it).
    await finishedInStore(proxy, 'paused', 1)
    const resume = await pauseRedis(PAUSE_MS)
    const { value: refused, ms } = await timed(() => fetch(`${proxy.url}/items/b`, { headers: { 'x-toolstorm-run': 'paused' } }))
    expect(refused.status).toBe(503)
    expect(ms).toBeGreaterThanOrEqual(BOUND_MS - 100)
    expect(ms).toBeLessThan(BOUND_MS + SLACK_MS)
    const body = (await refused.json()) as { error: { code: string; message: string } }
    expect(body.error.code).toBe('ERR_STATE_UNAVAILABLE')
    expect(body.error.message).toContain(`Failed to reach the state store ${setting.redis!.url} during traffic: no answer within 2 s.`)
    expect(setting.upstream!.hits('/items/b')).toBe(0)
    // Known to be down: the next exchange is refused at once instead of waiting again.
    const { value: next, ms: nextMs } = await timed(() => fetch(`${proxy.url}/items/c`, { headers: { 'x-toolstorm-run': 'paused' } }))
    expect(next.status).toBe(503)
    expect(nextMs).toBeLessThan(SLACK_MS)
    await resume()
    // Right after the pause a retry may still meet the store marked down (refused and counted too).
    let status = 0
    let refusedWhileRecovering = 0
    for (let attempt = 0; attempt < 100 && status !== 200; attempt++) {
      status = (await fetch(`${proxy.url}/items/d`, { headers: { 'x-toolstorm-run': 'paused' } })).status
      if (status !== 200) {
        expect(status).toBe(503)
        refusedWhileRecovering++
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
    }
    expect(status).toBe(200)
    const report = (await (await admin(proxy, '/report?run=paused')).json()) as Report
    expect(report.stateUnavailable).toBe(2 + refusedWhileRecovering)
    // The call whose BEGIN Redis ran after its deadline is not listed as running forever.
    expect(report.calls.filter((call) => call.outcome === 'running')).toEqual([])
  })

  it('passes the exchange through within the bound with stateUnavailable: pass', async () => {
    const proxy = await replica({ stateUnavailable: 'pass' }, { rules: [{ name: 'down', route: 'GET /items/*', kind: 'unavailable' }] })
    expect((await fetch(`${proxy.url}/items/a`)).status).toBe(503)
    const resume = await pauseRedis(PAUSE_MS)
    const { value: passed, ms } = await timed(() => fetch(`${proxy.url}/items/b`))
    expect(passed.status).toBe(200)
    expect(ms).toBeLessThan(BOUND_MS + SLACK_MS)
    expect(setting.upstream!.hits('/items/b')).toBe(1)
    await resume()
  })

  it('counts a recorded exchange Redis did not take in time, and still answers the client', async () => {
    const storm = createStorm({ rules: [] })
    const state = await connectRedisState(storm, { url: setting.redis!.url, prefix: 'silent-rec' })
    const recorder = createCassetteRecorder(storm, { source: 'proxy', urlForm: 'origin', targets: [setting.upstream!.url], shared: state })
    const proxy = await startProxy({ targets: [setting.upstream!.url], storm, observer: recorder.observer, state })
    try {
      // Begun before the pause, finished during it: its cassette line meets a silent Redis.
      // The upstream holds its answer 1.5 s; the pause starts once the upstream has the request, so
      // however loaded the machine, the answer comes back while Redis is silent.
      const slow = fetch(`${proxy.url}/slow?ms=1500`, { headers: { 'x-toolstorm-run': 'rec' } })
      for (let attempt = 0; attempt < 200 && setting.upstream!.hits('/slow') === 0; attempt++) {
        await new Promise((resolve) => setTimeout(resolve, 10))
      }
      expect(setting.upstream!.hits('/slow')).toBe(1)
      const resume = await pauseRedis(PAUSE_MS)
      expect((await slow).status).toBe(200)
      await resume()
      let report = (await (await admin(proxy, '/report?run=rec')).json()) as Report
      for (let attempt = 0; attempt < 50 && !report.stateUnavailable; attempt++) {
        await new Promise((resolve) => setTimeout(resolve, 100))
        report = (await (await admin(proxy, '/report?run=rec')).json()) as Report
      }
      // The FINISH and the CASSETTE scripts of that exchange missed their deadline: both counted.
      expect(report.stateUnavailable).toBeGreaterThanOrEqual(1)
    } finally {
      await proxy.close()
      await recorder.discard()
      await state.close()
    }
  })

  it('answers the admin API (report, runs, rules) 503 within the bound', async () => {
    const proxy = await replica()
    const resume = await pauseRedis(PAUSE_MS)
    for (const [path, init] of [['/report', {}], ['/runs', {}], ['/rules', { method: 'PUT', body: JSON.stringify({ rules: [] }) }]] as const) {
      const { value: answer, ms } = await timed(() => admin(proxy, path, init))
      expect(answer.status, path).toBe(503)
      expect(((await answer.json()) as { error: { code: string } }).error.code).toBe('ERR_STATE_UNAVAILABLE')
      expect(ms, path).toBeLessThan(BOUND_MS + SLACK_MS)
    }
    await resume()
  })
})
