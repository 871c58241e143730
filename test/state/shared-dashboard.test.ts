/**
 * Every replica's dashboard shows the whole run live (`--state`): the event stream the dashboard
 * reads (`GET /events?run=`) lists calls, effects and coverage from the other replicas, read
 * from a real Redis (Debian's redis-server) while the stream is open.
 */
import { describe, expect, it } from 'vitest'
import type { StreamBatch, StreamSnapshot } from '../../src/proxy/admin/events.js'
import type { CallRecord } from '../../src/engine/schema/report.js'
import { startProxy, type ProxyServer } from '../../src/proxy/proxy-server.js'
import { openEvents, type AdminClient, type StreamEvent } from '../helpers/event-stream.js'
import { hasRedis } from '../helpers/redis-server.js'
import { useReplicaSetting } from '../helpers/replicas.js'
import { closing } from '../helpers/teardown.js'

const RULES = { rules: [{ name: 'second-item', route: 'GET /items/*', kind: 'unavailable' as const, calls: [2] }] }

const setting = useReplicaSetting()

async function replica(): Promise<ProxyServer & AdminClient> {
  const proxy = closing(await startProxy({ targets: [setting.upstream!.url], config: RULES, state: { url: setting.redis!.url, prefix: 'dash' } }))
  return Object.assign(proxy, { admin: (path: string, init: RequestInit = {}) => fetch(proxy.adminUrl + path, { ...init, headers: { authorization: `Bearer ${proxy.token}`, ...(init.headers as Record<string, string>) } }) })
}

/** Every call the stream has shown, latest copy by id. */
function callsOf(events: StreamEvent[]): CallRecord[] {
  const calls = new Map<number, CallRecord>()
  for (const { event, data } of events) {
    if (event === 'snapshot') {
      calls.clear()
      for (const call of (data as StreamSnapshot).report.calls) calls.set(call.id, call)
    } else for (const call of (data as StreamBatch).calls) calls.set(call.id, call)
  }
  return [...calls.values()].sort((a, b) => a.id - b.id)
}

/** Wait until the merged report holds `count` finished calls (they are written just after the response). */
async function finished(proxy: AdminClient, run: string, count: number): Promise<void> {
  await expect.poll(async () => ((await (await proxy.admin(`/report?run=${run}`)).json()) as { calls: CallRecord[] }).calls.filter((call) => call.outcome !== 'running').length, { timeout: 1000, interval: 20 }).toBe(count)
}

const lastBatch = (events: StreamEvent[]) => events.filter((e) => e.event === 'batch').at(-1)?.data as StreamBatch | undefined

describe.skipIf(!hasRedis)("every replica's dashboard shows the whole run", () => {
  it('lists a call that went through another replica within a second, with the shared coverage and counters', async () => {
    const [a, b] = [await replica(), await replica()]
    const headers = { 'x-toolstorm-run': 'live' }
    expect((await fetch(`${a.url}/items/x`, { headers })).status).toBe(200)
    let servedAt = 0
    let shownAfter = -1
    const stream = openEvents(a, 'live', (events) => {
      const done = callsOf(events).filter((call) => call.outcome !== 'running').length >= 3
      if (done && shownAfter < 0) shownAfter = performance.now() - servedAt
      return done
    })
    // The stream opened (its snapshot is sent at once) before the calls go through B.
    await stream.opened
    const seen = stream.events
    expect((await fetch(`${b.url}/items/x`, { headers })).status).toBe(503)
    expect((await fetch(`${b.url}/items/x`, { headers })).status).toBe(200)
    servedAt = performance.now()
    const events = await seen
    expect(shownAfter).toBeLessThan(1000)
    expect(events.filter((e) => e.event === 'snapshot')).toHaveLength(1)
    expect(callsOf(events).map((call) => [call.id, call.route, call.ordinal, call.status, call.fault])).toEqual([
      [1, 'GET /items/x', 1, 200, null],
      [2, 'GET /items/x', 2, 503, 'second-item'],
      [3, 'GET /items/x', 3, 200, null],
    ])
    const batch = lastBatch(events)!
    expect(batch.coverage).toEqual({ 'second-item': { eligible: 1, selected: 1, triggered: 1 } })
    expect(batch.stats).toEqual({ calls: 3, droppedCalls: 0, budgetRejections: 0 })
  })

  it('lists a call still running on another replica as it runs, then its finished copy', async () => {
    const [a, b] = [await replica(), await replica()]
    const headers = { 'x-toolstorm-run': 'slow' }
    expect((await fetch(`${a.url}/items/x`, { headers })).status).toBe(200)
    let answered = false
    let runningShown: boolean | null = null
    const stream = openEvents(a, 'slow', (events) => {
      const slow = callsOf(events).find((call) => call.route === 'GET /slow')
      if (slow?.outcome === 'running' && runningShown === null) runningShown = !answered
      return slow !== undefined && slow.outcome !== 'running'
    })
    await stream.opened
    const seen = stream.events
    const response = await fetch(`${b.url}/slow?ms=1500`, { headers })
    answered = true
    expect(response.status).toBe(200)
    const events = await seen
    // Shown while B was still waiting on the upstream, and replaced by the finished call.
    expect(runningShown).toBe(true)
    expect(callsOf(events).map((call) => [call.id, call.route, call.outcome, call.status])).toEqual([
      [1, 'GET /items/x', 'response', 200],
      [2, 'GET /slow', 'response', 200],
    ])
  })

  it('opens with every replica\'s calls of the run, and shows an effect reported to another replica', async () => {
    const [a, b] = [await replica(), await replica()]
    await (await fetch(`${b.url}/ship`, { method: 'POST', headers: { 'x-toolstorm-run': 'fx' }, body: '{"order":"o-1"}' })).arrayBuffer()
    await finished(a, 'fx', 1)
    const call = setting.upstream!.requests.at(-1)!.headers['x-toolstorm-call']
    const stream = openEvents(a, 'fx', (events) => events.some((e) => e.event === 'batch' && (e.data as StreamBatch).effects.length > 0))
    await stream.opened
    const seen = stream.events
    const started = performance.now()
    expect((await b.admin('/effects', { method: 'POST', body: JSON.stringify({ name: 'shipment', key: 'o-1', call }) })).status).toBe(201)
    const events = await seen
    expect(performance.now() - started).toBeLessThan(1000)
    const snapshot = events[0]!
    expect(snapshot.event).toBe('snapshot')
    expect((snapshot.data as StreamSnapshot).exists).toBe(true)
    expect((snapshot.data as StreamSnapshot).report.calls.map((c) => [c.id, c.route, c.status])).toEqual([[1, 'POST /ship', 201]])
    expect((snapshot.data as StreamSnapshot).runs).toEqual([{ id: 'fx', calls: 1 }])
    expect(lastBatch(events)!.effects).toEqual([{ name: 'shipment', key: 'o-1', call: 1, at: expect.any(Number), identity: 1, redacted: false }])
  })

  it("carries an effect report another replica refused in the counters, so the dashboard's checks on effects fail live", async () => {
    const [a, b] = [await replica(), await replica()]
    const headers = { 'x-toolstorm-run': 'refused' }
    expect((await fetch(`${a.url}/items/x`, { headers })).status).toBe(200)
    const stream = openEvents(a, 'refused', (events) => lastBatch(events)?.stats.refusedEffects !== undefined)
    await stream.opened
    // A report naming a call no exchange of B has: counted in every run the store keeps.
    expect((await fetch(`${b.adminUrl}/effects`, { method: 'POST', body: JSON.stringify({ name: 'shipment', key: 'o-1', call: 'made-up' }) })).status).toBe(400)
    const batch = lastBatch(await stream.events)!
    expect(batch.stats.refusedEffects).toEqual({ count: 1, first: 'Failed to record an effect: no exchange "made-up" in this run\'s shared state. Was the run reset, or did the request bypass toolstorm?' })
  })

  it('sends a fresh snapshot when another replica resets the run', async () => {
    const [a, b] = [await replica(), await replica()]
    await (await fetch(`${b.url}/items/1`, { headers: { 'x-toolstorm-run': 'gone' } })).arrayBuffer()
    await finished(a, 'gone', 1)
    const stream = openEvents(a, 'gone', (events) => events.filter((e) => e.event === 'snapshot').length >= 2)
    await stream.opened
    const seen = stream.events
    expect((await b.admin('/reset?run=gone', { method: 'POST' })).status).toBe(200)
    const snapshots = (await seen).filter((e) => e.event === 'snapshot').map((e) => e.data as StreamSnapshot)
    expect(snapshots[0]!.report.calls).toHaveLength(1)
    expect(snapshots[1]).toMatchObject({ exists: false, runs: [] })
    expect(snapshots[1]!.report.calls).toEqual([])
  })

  it('catches up once Redis is back after an outage', async () => {
    const [a, b] = [await replica(), await replica()]
    const headers = { 'x-toolstorm-run': 'outage' }
    await (await fetch(`${b.url}/items/x`, { headers })).arrayBuffer()
    await finished(a, 'outage', 1)
    const stream = openEvents(a, 'outage', (events) => callsOf(events).some((call) => call.url.endsWith('/items/after') && call.outcome !== 'running'), 8000)
    await stream.opened
    const seen = stream.events
    await setting.redis!.kill()
    // Polls fail meanwhile; the stream stays open (the outage lasts a fixed while: what is tested is
    // that the stream outlives it).
    await new Promise((resolve) => setTimeout(resolve, 600))
    await setting.redis!.restart()
    let status = 0
    for (let attempt = 0; attempt < 100 && status !== 200; attempt++) {
      status = (await fetch(`${b.url}/items/after`, { headers })).status
      if (status !== 200) await new Promise((resolve) => setTimeout(resolve, 50))
    }
    expect(status).toBe(200)
    // Redis restarted empty: the run started again there, and A's dashboard shows it from a fresh snapshot.
    const events = await seen
    expect(callsOf(events).map((call) => [call.id, new URL(call.url).pathname, call.outcome])).toEqual([[1, '/items/after', 'response']])
    expect(events.filter((e) => e.event === 'snapshot').length).toBeGreaterThanOrEqual(2)
  })
})
