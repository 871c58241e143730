/**
 * Recording across proxy replicas that share runs through a real Redis: every replica appends its
 * exchanges to the run's cassette stream, and the cassette assembled from them is the one a single
 * proxy records (same exchanges, same order) and replays strictly.
 */
import { rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { describe, expect, it, onTestFinished } from 'vitest'
import { Cassette, type CassetteExchange } from '../../src/cassette/format/cassette.js'
import { createCassetteRecorder, type CassetteRecorder } from '../../src/cassette/record/cassette-recorder.js'
import { startReplayServer } from '../../src/proxy/replay/replay-server.js'
import type { StormConfigInput } from '../../src/engine/schema/config.js'
import { connectRedisState, type RedisRunState } from '../../src/state/redis-run-state.js'
import { createStorm } from '../../src/create-storm.js'
import { ToolstormEffects } from '../../src/effects/toolstorm-effects.js'
import { startProxy, type ProxyServer } from '../../src/proxy/proxy-server.js'
import { hasRedis } from '../helpers/redis-server.js'
import { useReplicaSetting } from '../helpers/replicas.js'
import { closing } from '../helpers/teardown.js'
import { startUpstream, type Upstream } from '../helpers/upstream.js'

const RULES: StormConfigInput = {
  seed: 7,
  maxCalls: 12,
  rules: [
    { name: 'second-ship', route: 'POST /ship', kind: 'unavailable', calls: [2] },
    { name: 'flaky-items', route: 'GET /items/*', kind: 'rate_limit', probability: 0.5, limit: 2, delay: 1 },
  ],
}

interface Step {
  method: string
  path: string
  body?: string
}

/** Items (draws under a limit), shipments with bodies (an ordinal fault), and two calls over the budget. */
function sequence(): Step[] {
  const steps: Step[] = []
  for (let i = 0; i < 6; i++) steps.push({ method: 'GET', path: `/items/sku-${i}` })
  for (let i = 0; i < 4; i++) steps.push({ method: 'POST', path: '/ship', body: JSON.stringify({ order: `o-${i}`, token: 'sk-live-123456789012345678901234' }) })
  for (let i = 0; i < 4; i++) steps.push({ method: 'GET', path: `/items/late-${i}` })
  return steps
}

const setting = useReplicaSetting()

interface Recording {
  proxy: ProxyServer
  recorder: CassetteRecorder
  state: RedisRunState | null
}

/** A proxy recording as `toolstorm proxy --record` does; with `shared`, a replica recording into Redis. */
async function recordingProxy(shared: boolean, target: Upstream = setting.upstream!): Promise<Recording> {
  const storm = createStorm(RULES)
  const state = shared ? await connectRedisState(storm, { url: setting.redis!.url, prefix: 'rec' }) : null
  const recorder = createCassetteRecorder(storm, { source: 'proxy', urlForm: 'origin', targets: [target.url], ...(state ? { shared: state } : {}) })
  const proxy = await startProxy({ targets: [target.url], storm, observer: recorder.observer, ...(state ? { state } : {}) })
  onTestFinished(async () => {
    await proxy.close()
    await recorder.discard()
    await state?.close()
  })
  return { proxy, recorder, state }
}

async function drive(proxies: Array<{ url: string }>, run: string): Promise<number[]> {
  const statuses: number[] = []
  let i = 0
  for (const step of sequence()) {
    const proxy = proxies[i++ % proxies.length]!
    const response = await fetch(proxy.url + step.path, { method: step.method, headers: { 'x-toolstorm-run': run, 'content-type': 'application/json' }, ...(step.body ? { body: step.body } : {}) })
    await response.arrayBuffer()
    statuses.push(response.status)
  }
  return statuses
}

/** What must be the same whichever replicas served the run (not timings, nor the upstream's Date). */
function essence(exchange: CassetteExchange) {
  const { date: _date, ...headers } = exchange.response?.headers ?? {}
  return {
    seq: exchange.seq,
    run: exchange.run,
    call: exchange.call,
    route: exchange.route,
    ordinal: exchange.ordinal,
    key: exchange.key,
    request: { ...exchange.request, headers: { ...exchange.request.headers, host: undefined } },
    outcome: exchange.outcome,
    status: exchange.response?.status,
    headers,
    body: exchange.response?.body,
    fault: exchange.fault,
    executed: exchange.executed,
    effects: exchange.effects,
  }
}

describe.skipIf(!hasRedis)('recording across replicas sharing a run through Redis', () => {
  it('keeps in the cassette a claim posted to another replica, judged against the effect the store holds', async () => {
    let effects: ToolstormEffects | null = null
    const tool = closing(await startUpstream({ onCommit: async (name, key, request) => void (await effects?.report(request, name, key)) }))
    const [a, b] = [await recordingProxy(true, tool), await recordingProxy(true, tool)]
    effects = new ToolstormEffects({ sidecarUrl: b.proxy.adminUrl, token: b.proxy.token })
    const shipped = await fetch(`${a.proxy.url}/ship`, { method: 'POST', headers: { 'x-toolstorm-run': 'claimed', 'content-type': 'application/json' }, body: JSON.stringify({ order: 'o-9' }) })
    expect(shipped.status).toBe(201)
    await effects.flush()
    // The agent says it failed, through replica B; A's cassette holds the claim and its verdict.
    expect(await effects.claim({ tool: 'POST /ship', status: 'failure', run: 'claimed' })).toBe(true)
    const file = path.join(os.tmpdir(), `toolstorm-shared-claims-${process.pid}.cassette.jsonl`)
    onTestFinished(() => rm(file, { force: true }))
    await a.recorder.save(file)
    const claims = (await Cassette.load(file)).header.claims
    expect(claims).toMatchObject([{ run: 'claimed', id: 1, tool: 'POST /ship', status: 'failure', verdict: 'silent_commit', calls: [1], effects: [{ name: 'shipment', key: 'o-9', call: 1 }] }])
  })

  it('assembles one cassette from 3 replicas in call order, equal to one proxy\'s recording, and it replays strictly', async () => {
    // Its own tool server: the replicas' one counts shipments from 1 too.
    const own = closing(await startUpstream())
    const single = await recordingProxy(false, own)
    const replicas = [await recordingProxy(true), await recordingProxy(true), await recordingProxy(true)]
    const alone = await drive([single.proxy], 'rec-1')
    const shared = await drive(replicas.map((replica) => replica.proxy), 'rec-1')
    expect(shared).toEqual(alone)
    expect(alone).toContain(429)
    expect(alone.filter((status) => status === 503)).toHaveLength(3)

    const expected = await single.recorder.cassette()
    // Each replica recorded a third; the cassette of any of them holds the whole run, in call order.
    expect(replicas.map((replica) => replica.recorder.size)).toEqual([5, 5, 4])
    for (const replica of replicas) {
      const assembled = await replica.recorder.cassette()
      expect(assembled.exchanges.map(essence)).toEqual(expected.exchanges.map(essence))
    }
    // Bodies are stored redacted, as one process stores them.
    const ship = (await replicas[2]!.recorder.cassette()).exchanges.find((exchange) => exchange.route === 'POST /ship')!
    expect(JSON.stringify(ship.request.body)).not.toContain('sk-live-123456789012345678901234')
    expect(JSON.stringify(ship.request.body)).toContain('o-0')

    // The assembled cassette replays strictly: the same requests, in the same order, get the recorded answers.
    const cassette = await replicas[0]!.recorder.cassette()
    const replay = closing(await startReplayServer(Cassette.parse(cassette.toString())))
    expect(await drive([replay], 'rec-1')).toEqual(alone)
    expect(replay.verdict()).toMatchObject({ passed: true, served: sequence().length, unused: 0 })
  })

  it('orders the cassette by call, not by when each replica finished', async () => {
    const [a, b] = [await recordingProxy(true), await recordingProxy(true)]
    const headers = { 'x-toolstorm-run': 'order' }
    // Call 1 (through A) is still running when call 2 (through B) has finished and been recorded.
    const slow = fetch(`${a.proxy.url}/slow?ms=300`, { headers }).then((response) => response.arrayBuffer())
    await expect.poll(() => setting.upstream!.hits('/slow'), { timeout: 1000, interval: 5 }).toBe(1)
    await (await fetch(`${b.proxy.url}/items/quick`, { headers })).arrayBuffer()
    await slow
    const cassette = await a.recorder.cassette()
    expect(cassette.exchanges.map((exchange) => [exchange.seq, exchange.call, exchange.route])).toEqual([
      [1, 1, 'GET /slow'],
      [2, 2, 'GET /items/quick'],
    ])
  })

  it('puts an effect reported to another replica on the call it belongs to', async () => {
    const [a, b] = [await recordingProxy(true), await recordingProxy(true)]
    await (await fetch(`${a.proxy.url}/ship`, { method: 'POST', headers: { 'x-toolstorm-run': 'fx' }, body: '{"order":"o-1"}' })).arrayBuffer()
    const call = setting.upstream!.requests.at(-1)!.headers['x-toolstorm-call']
    const posted = await fetch(`${b.proxy.adminUrl}/effects`, { method: 'POST', body: JSON.stringify({ name: 'shipment', key: 'o-1', call }) })
    expect(posted.status).toBe(201)
    const cassette = await b.recorder.cassette()
    expect(cassette.exchanges).toHaveLength(0)
    const fromA = await a.recorder.cassette()
    expect(fromA.exchanges.map((exchange) => [exchange.call, exchange.effects.map((effect) => [effect.name, effect.key, effect.identity])])).toEqual([[1, [['shipment', 'o-1', 1]]]])
  })
})
