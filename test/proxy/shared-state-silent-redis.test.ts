/**
 * A Redis that is connected but does not answer (frozen with SIGSTOP, as a frozen host or a long
 * fork would leave it) counts as unreachable within the documented bound (2 s), on every path that
 * needs it: an exchange is answered 503 (or passed with --state-unavailable=pass) and counted, the
 * admin API answers 503, and recording counts the line it could not store (#29).
 * node-redis clears a command's own timeout once the command is written, so the bound is ours.
 * Each test thaws Redis once it has seen what it checks: the silence lasts as long as it needs.
 */
import { describe, expect, it, vi } from 'vitest'
import type { Report } from '../../src/engine/schema/report.js'
import type { StormConfigInput } from '../../src/engine/schema/config.js'
import { startProxy, type ProxyOptions, type ProxyServer } from '../../src/proxy/proxy-server.js'
import { createCassetteRecorder } from '../../src/cassette/record/cassette-recorder.js'
import { connectRedisState } from '../../src/state/redis-run-state.js'
import { createStorm } from '../../src/create-storm.js'
import { hasRedis } from '../helpers/redis-server.js'
import { useReplicaSetting } from '../helpers/replicas.js'
import { startUpstream } from '../helpers/upstream.js'
import { closing } from '../helpers/teardown.js'

/** The documented bound, plus what a loaded 2-core machine adds. */
const BOUND_MS = 2000
const SLACK_MS = 1200

/** Called at the upstream's commit point of `POST /ship`, before it answers. */
let atCommit: (() => void) | undefined
const setting = useReplicaSetting(() => startUpstream({ onCommit: () => atCommit?.() }))

async function replica(extra: Partial<ProxyOptions> = {}, config: StormConfigInput = { rules: [] }): Promise<ProxyServer> {
  return closing(await startProxy({ targets: [setting.upstream!.url], config, state: { url: setting.redis!.url, prefix: 'silent' }, ...extra }))
}

function admin(proxy: ProxyServer, path: string, init: RequestInit = {}): Promise<Response> {
  return fetch(proxy.adminUrl + path, { ...init, headers: { authorization: `Bearer ${proxy.token}`, ...(init.headers as Record<string, string>) } })
}

/** Wait until the run's first `count` calls are written to the store (none listed as running). */
async function finishedInStore(proxy: ProxyServer, run: string, count: number): Promise<void> {
  let report: Report | undefined
  await vi.waitFor(
    async () => {
      report = (await (await admin(proxy, `/report?run=${run}`)).json()) as Report
      if (report.calls.length < count || report.calls.some((call) => call.outcome === 'running')) throw new Error(`the run's ${count} call(s) were not written to the store: ${JSON.stringify(report.calls)}`)
    },
    { timeout: 5000, interval: 20 },
  )
}

/** Freeze the test's Redis; thawed by the returned function, or when the test finishes (before its proxies close). */
function freezeRedis(): () => Promise<void> {
  const thaw = setting.redis!.freeze()
  closing({ close: thaw })
  return thaw
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
    const thaw = freezeRedis()
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
    await thaw()
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
    const thaw = freezeRedis()
    const { value: passed, ms } = await timed(() => fetch(`${proxy.url}/items/b`))
    expect(passed.status).toBe(200)
    expect(ms).toBeLessThan(BOUND_MS + SLACK_MS)
    expect(setting.upstream!.hits('/items/b')).toBe(1)
    await thaw()
  })

  it('counts a recorded exchange Redis did not take in time, and still answers the client', async () => {
    const storm = createStorm({ rules: [] })
    const state = await connectRedisState(storm, { url: setting.redis!.url, prefix: 'silent-rec' })
    const recorder = createCassetteRecorder(storm, { source: 'proxy', urlForm: 'origin', targets: [setting.upstream!.url], shared: state })
    const proxy = await startProxy({ targets: [setting.upstream!.url], storm, observer: recorder.observer, state })
    let thaw: (() => Promise<void>) | undefined
    // Begun before the freeze, finished during it: its cassette line meets a silent Redis. The freeze
    // starts at the upstream's commit point, before it answers, however loaded the machine.
    atCommit = () => void (thaw = setting.redis!.freeze())
    try {
      const answer = await fetch(`${proxy.url}/ship`, { method: 'POST', body: '{"order":"o-1"}', headers: { 'x-toolstorm-run': 'rec' } })
      expect(answer.status).toBe(201)
      await answer.text()
      expect(thaw).toBeDefined()
      // The line is handed to the store (its command and its deadline timer started) ...
      await recorder.settled()
      // ... so a timer of the deadline's length started now fires after it. No event outside the
      // store shows the miss: it is counted in memory, and the report that shows it needs Redis back.
      await new Promise((resolve) => setTimeout(resolve, BOUND_MS))
      await thaw!()
      thaw = undefined
      // The CASSETTE script of that exchange (and its FINISH) missed their deadline: counted.
      await expect.poll(async () => ((await (await admin(proxy, '/report?run=rec')).json()) as Report).stateUnavailable ?? 0, { timeout: 5000, interval: 100 }).toBeGreaterThanOrEqual(1)
    } finally {
      atCommit = undefined
      await thaw?.()
      await proxy.close()
      await recorder.discard()
      await state.close()
    }
  })

  it('answers the admin API (report, runs, rules) 503 within the bound', async () => {
    const proxy = await replica()
    const thaw = freezeRedis()
    for (const [path, init] of [['/report', {}], ['/runs', {}], ['/rules', { method: 'PUT', body: JSON.stringify({ rules: [] }) }]] as const) {
      const { value: answer, ms } = await timed(() => admin(proxy, path, init))
      expect(answer.status, path).toBe(503)
      expect(((await answer.json()) as { error: { code: string } }).error.code).toBe('ERR_STATE_UNAVAILABLE')
      expect(ms, path).toBeLessThan(BOUND_MS + SLACK_MS)
    }
    await thaw()
  })
})
