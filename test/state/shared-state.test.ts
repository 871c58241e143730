/**
 * Proxy replicas share one run's state through a real Redis (Debian's redis-server): the same
 * client sequence alternated over 3 replicas gets the decisions and the report of 1 proxy.
 */
import http from 'node:http'
import path from 'node:path'
import type { AddressInfo } from 'node:net'
import { createClient } from 'redis'
import { describe, expect, it } from 'vitest'
import { parseConfig } from '../../src/create-storm.js'
import { decide } from '../../src/engine/decision.js'
import { contract } from '../../src/contracts/contract.js'
import type { StormConfigInput } from '../../src/engine/schema/config.js'
import type { CallRecord, Report } from '../../src/engine/schema/report.js'
import { ToolstormEffects } from '../../src/effects/toolstorm-effects.js'
import { startProxy, type ProxyOptions, type ProxyServer } from '../../src/proxy/proxy-server.js'
import { hasRedis, startRedis } from '../helpers/redis-server.js'
import { startUpstream } from '../helpers/upstream.js'
import { useReplicaSetting } from '../helpers/replicas.js'
import { closing, temporaryFolder } from '../helpers/teardown.js'

const RULES: StormConfigInput = {
  seed: 7,
  maxCalls: 22,
  rules: [
    { name: 'second-ship', route: 'POST /ship', kind: 'unavailable', calls: [2, 4] },
    { name: 'flaky-items', route: 'GET /items/*', kind: 'rate_limit', probability: 0.5, limit: 3, delay: 1 },
    { name: 'keyed', route: 'GET /keyed', kind: 'unavailable', probability: 0.4 },
  ],
}

/** The client sequence: ordinals, keys (some repeated: de-duplicated), draws, limits and the budget. */
function sequence(): Array<{ method: string; path: string; headers?: Record<string, string>; body?: string }> {
  const steps: Array<{ method: string; path: string; headers?: Record<string, string>; body?: string }> = []
  for (let i = 0; i < 8; i++) steps.push({ method: 'GET', path: `/items/sku-${i}` })
  for (let i = 0; i < 5; i++) steps.push({ method: 'POST', path: '/ship', body: JSON.stringify({ order: `o-${i}` }) })
  for (const key of ['a', 'b', 'a', 'a', '#1', 'c', 'b']) steps.push({ method: 'GET', path: '/keyed', headers: { 'x-toolstorm-key': key } })
  for (let i = 0; i < 4; i++) steps.push({ method: 'GET', path: `/items/late-${i}` })
  return steps
}

const sameDecision = (call: CallRecord) => ({ id: call.id, route: call.route, ordinal: call.ordinal, key: call.key, fault: call.fault, injected: call.injected, status: call.status, executed: call.executed })

const setting = useReplicaSetting()

async function replica(extra: Partial<ProxyOptions> = {}, config: StormConfigInput = RULES): Promise<ProxyServer> {
  const proxy = closing(await startProxy({ targets: [setting.upstream!.url], config, state: { url: setting.redis!.url, prefix: 'test' }, ...extra }))
  return proxy
}

function admin(proxy: ProxyServer, path: string, init: RequestInit = {}): Promise<Response> {
  return fetch(proxy.adminUrl + path, { ...init, headers: { authorization: `Bearer ${proxy.token}`, ...(init.headers as Record<string, string>) } })
}

async function drive(replicas: ProxyServer[], run: string): Promise<number[]> {
  const statuses: number[] = []
  let i = 0
  for (const step of sequence()) {
    const proxy = replicas[i++ % replicas.length] as ProxyServer
    const response = await fetch(proxy.url + step.path, { method: step.method, headers: { 'x-toolstorm-run': run, 'content-type': 'application/json', ...step.headers }, ...(step.body ? { body: step.body } : {}) })
    await response.arrayBuffer()
    statuses.push(response.status)
  }
  return statuses
}

async function settledReport(proxy: ProxyServer, run: string, calls: number): Promise<Report> {
  // Finished calls are written just after the response (until then they are listed as running): wait until all are in.
  for (let attempt = 0; attempt < 100; attempt++) {
    const report = (await (await admin(proxy, `/report?run=${run}`)).json()) as Report
    if (report.calls.filter((call) => call.outcome !== 'running').length >= calls) return report
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  throw new Error(`the report of ${run} never held ${calls} calls`)
}

describe.skipIf(!hasRedis)('proxy replicas sharing a run through Redis', () => {
  it('makes the same decisions over 3 replicas as one proxy in memory', async () => {
    const single = closing(await startProxy({ targets: [setting.upstream!.url], config: RULES }))
    const replicas = [await replica(), await replica(), await replica()]

    const alone = await drive([single], 'r1')
    const shared = await drive(replicas, 'r1')
    expect(shared).toEqual(alone)
    // The sequence exercises every shared decision: budget refusals, ordinals, limits and draws.
    expect(alone.filter((status) => status === 503).length).toBeGreaterThan(2)
    expect(alone).toContain(429)

    const expected = (await (await admin(single, '/report?run=r1')).json()) as Report
    const calls = expected.calls.length
    for (const proxy of replicas) {
      const merged = await settledReport(proxy, 'r1', calls)
      expect(merged.calls.map(sameDecision)).toEqual(expected.calls.map(sameDecision))
      expect(merged.coverage).toEqual(expected.coverage)
      expect(merged.budgetRejections).toBe(expected.budgetRejections)
      expect(merged.budgetRejections).toBe(2)
    }
    // Repeated keys were de-duplicated the same way (a#2, a#3; #1 sent explicitly after #1 was handed out).
    expect(expected.calls.filter((call) => call.route === 'GET /keyed').map((call) => call.key)).toEqual(['a', 'b', 'a#2', 'a#3', '#1#2', 'c', 'b#2'])
  })

  it("decides a run's calls by its own rules set through replica A on replicas B and C, as one proxy does, and shows them and their coverage in every replica's report", async () => {
    const own = { ...RULES, seed: 9 }
    const single = closing(await startProxy({ targets: [setting.upstream!.url], config: { rules: [] } }))
    const [a, b, c] = [await replica({}, { rules: [] }), await replica({}, { rules: [] }), await replica({}, { rules: [] })]
    expect((await admin(single, '/rules?run=own', { method: 'PUT', body: JSON.stringify(own) })).status).toBe(200)
    const put = await admin(a!, '/rules?run=own', { method: 'PUT', body: JSON.stringify(own) })
    expect(put.status).toBe(200)

    // Served by B and C only: A set the rules, the store carries them.
    const alone = await drive([single], 'own')
    const shared = await drive([b!, c!], 'own')
    expect(shared).toEqual(alone)
    expect(alone.filter((status) => status === 503).length).toBeGreaterThan(2)
    expect(alone).toContain(429)
    const expected = (await (await admin(single, '/report?run=own')).json()) as Report
    expect(expected.seed).toBe(9)
    for (const proxy of [a!, b!, c!]) {
      const merged = await settledReport(proxy, 'own', expected.calls.length)
      expect(merged.calls.map(sameDecision)).toEqual(expected.calls.map(sameDecision))
      expect(merged.rules.map((rule) => rule.name)).toEqual(['second-ship', 'flaky-items', 'keyed'])
      expect(merged.seed).toBe(9)
      expect(merged.coverage).toEqual(expected.coverage)
      expect(merged.coverage['second-ship']).toMatchObject({ selected: 2, triggered: 2 })
      expect(merged.budgetRejections).toBe(2)
      // Any replica shows the run's own rules, though only A was given them.
      expect(((await (await admin(proxy, '/rules?run=own')).json()) as { own: boolean; seed: number })).toMatchObject({ own: true, seed: 9 })
    }
    // Replaced through C: B, which decided by the first rules, decides its very next call by these.
    expect((await admin(c!, '/rules?run=own', { method: 'PUT', body: JSON.stringify({ rules: [{ name: 'down', route: 'GET /items/*', kind: 'unavailable' }] }) })).status).toBe(200)
    const now = await fetch(`${b!.url}/items/now`, { headers: { 'x-toolstorm-run': 'own' } })
    await now.arrayBuffer()
    // Injected by "down", not refused by the first rules' budget (spent: maxCalls 22).
    expect([now.status, now.headers.get('x-toolstorm-refused')]).toEqual([503, null])
    expect((await settledReport(a!, 'own', expected.calls.length + 1)).coverage).toMatchObject({ down: { eligible: 1, selected: 1, triggered: 1 } })
    // Another run keeps the proxies' rules (none), on every replica.
    const plain = await drive([single], 'plain')
    expect(plain.filter((status) => status === 503 || status === 429)).toEqual([])
    expect(await drive([c!, b!], 'other')).toEqual(plain)

    // Taken back through C: B decides the run's next call by the proxies' rules again.
    expect((await admin(c!, '/rules?run=own', { method: 'DELETE' })).status).toBe(200)
    await (await admin(a!, '/reset?run=own', { method: 'POST' })).arrayBuffer()
    expect(await drive([b!], 'own')).toEqual(plain)
    expect(((await (await admin(a!, '/rules?run=own')).json()) as { own: boolean; rules: unknown[] })).toMatchObject({ own: false, rules: [] })
    // The active run would be one replica's alone: still refused.
    const active = await admin(b!, '/active-run?run=own', { method: 'PUT' })
    expect(active.status).toBe(409)
    expect(((await active.json()) as { error: { code: string; message: string } }).error).toMatchObject({ code: 'ERR_STATE', message: expect.stringContaining('the active run is not shared between replicas') })
  })

  it('correlates an effect posted to replica C with the call that went through replica A, in every replica\'s report', async () => {
    const [a, b, c] = [await replica({}, { rules: [] }), await replica({}, { rules: [] }), await replica({}, { rules: [] })]
    const effects = new ToolstormEffects({ sidecarUrl: c!.adminUrl })
    const tool = await startUpstream({ onCommit: async (name, key, request) => void (await effects.report(request, name, key)) })
    try {
      const viaA = closing(await startProxy({ targets: [tool.url], config: { rules: [] }, state: { url: setting.redis!.url, prefix: 'test' } }))
      const response = await fetch(`${viaA.url}/ship`, { method: 'POST', headers: { 'x-toolstorm-run': 'fx', 'content-type': 'application/json' }, body: JSON.stringify({ order: 'o-9' }) })
      expect(response.status).toBe(201)
      await effects.flush()
      expect(effects.stats()).toMatchObject({ sent: 1 })
      const report = await settledReport(b!, 'fx', 1)
      expect(report.effects).toEqual([{ name: 'shipment', key: 'o-9', call: 1, at: expect.any(Number), identity: 1, redacted: false }])
      expect(report.calls[0]).toMatchObject({ id: 1, route: 'POST /ship', status: 201, executed: true })
      // A late report for the finished call (a retry's duplicate commit) still finds it, on another replica.
      const late = await fetch(`${a!.adminUrl}/effects`, { method: 'POST', body: JSON.stringify({ name: 'shipment', key: 'o-9', call: tool.requests[0]!.headers['x-toolstorm-call'] }) })
      expect(late.status).toBe(201)
      expect(((await late.json()) as { effect: unknown }).effect).toMatchObject({ call: 1, identity: 1 })
      // An id no replica handed out is refused, on any replica.
      const forged = await fetch(`${a!.adminUrl}/effects`, { method: 'POST', body: JSON.stringify({ name: 'x', key: 'y', call: 'abc-1-zzzz.Zng' }) })
      expect(forged.status).toBe(400)
      expect(((await forged.json()) as { error: { code: string } }).error.code).toBe('ERR_EFFECT_INVALID')
      // The refusal is on record in the run the id names, for every replica: contracts on effects cannot pass.
      expect((await settledReport(b!, 'fx', 1)).refusedEffects).toEqual({ count: 1, first: expect.stringContaining('no exchange "abc-1-zzzz.Zng"') })
      const verdict = await (await admin(c!, '/contract?run=fx', { method: 'POST', body: JSON.stringify({ checks: [{ type: 'noDuplicateEffects' }] }) })).json()
      expect(verdict).toMatchObject({ passed: false, checks: [{ detail: expect.stringContaining('but 1 effect report(s) were refused while the run was kept') }] })
    } finally {
      await tool.close()
    }
  })

  it("judges a claim posted to replica B against the call through A and the effect posted to C, in every replica's report", async () => {
    const [b, c] = [await replica({}, { rules: [] }), await replica({}, { rules: [] })]
    const effects = new ToolstormEffects({ sidecarUrl: c!.adminUrl })
    const tool = await startUpstream({ onCommit: async (name, key, request) => void (await effects.report(request, name, key)) })
    try {
      const a = closing(await startProxy({ targets: [tool.url], config: { rules: [] }, state: { url: setting.redis!.url, prefix: 'test' } }))
      const response = await fetch(`${a.url}/ship`, { method: 'POST', headers: { 'x-toolstorm-run': 'claimed', 'content-type': 'application/json' }, body: JSON.stringify({ order: 'o-3' }) })
      expect(response.status).toBe(201)
      await effects.flush()
      // The agent says the shipment failed, yet it committed: a silent commit, whichever replica reports.
      const claim = await admin(b!, '/claims', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ tool: 'POST /ship', status: 'failure', run: 'claimed' }) })
      expect(claim.status).toBe(201)
      for (const proxy of [a, b!, c!]) {
        const report = await settledReport(proxy, 'claimed', 1)
        expect(report.claims).toMatchObject([{ id: 1, tool: 'POST /ship', status: 'failure', verdict: 'silent_commit', join: 'order', calls: [1], effects: [{ name: 'shipment', key: 'o-3', call: 1 }] }])
      }
      // A reset forgets the run's claims with its calls.
      expect((await admin(b!, '/reset?run=claimed', { method: 'POST' })).status).toBeLessThan(300)
      expect(((await (await admin(c!, '/report?run=claimed')).json()) as Report).claims).toBeUndefined()
    } finally {
      await tool.close()
    }
  })

  it('links a call made while serving another call as its child, across replicas, and not once the parent finished', async () => {
    let inner = ''
    let callId = ''
    const tool = http.createServer((req, res) => {
      req.resume()
      void (async () => {
        if (req.url === '/outer') {
          callId = String(req.headers['x-toolstorm-call'])
          // The tool calls another tool through replica B while serving the call through replica A.
          await (await fetch(`${inner}/items/nested`, { headers: { 'x-toolstorm-run': 'tree', 'x-toolstorm-call': callId } })).arrayBuffer()
        }
        res.writeHead(200, { 'content-length': 2 })
        res.end('ok')
      })()
    })
    await new Promise<void>((resolve) => tool.listen(0, '127.0.0.1', resolve))
    try {
      const target = `http://127.0.0.1:${(tool.address() as AddressInfo).port}`
      const a = closing(await startProxy({ targets: [target], config: { rules: [] }, state: { url: setting.redis!.url, prefix: 'test' } }))
      const b = closing(await startProxy({ targets: [target], config: { rules: [] }, state: { url: setting.redis!.url, prefix: 'test' } }))
      inner = b.url
      expect((await fetch(`${a.url}/outer`, { headers: { 'x-toolstorm-run': 'tree' } })).status).toBe(200)
      await settledReport(a, 'tree', 2)
      // Too late: the parent finished.
      await (await fetch(`${b.url}/items/late`, { headers: { 'x-toolstorm-run': 'tree', 'x-toolstorm-call': callId } })).arrayBuffer()
      const report = await settledReport(b, 'tree', 3)
      expect(report.calls.map((call) => [call.id, call.route, call.parent])).toEqual([
        [1, 'GET /outer', null],
        [2, 'GET /items/nested', 1],
        [3, 'GET /items/late', null],
      ])
    } finally {
      tool.close()
    }
  })

  it('lists a call still running on another replica in the merged report, as one process lists it, then finished', async () => {
    // A draw decides: the running call's rule is filled in by the second script (SELECT).
    const config: StormConfigInput = { seed: 5, rules: [{ name: 'slow-down', route: 'GET /slow', kind: 'latency', delay: 0.01, probability: 0.5 }] }
    const key = ['order-1', 'order-2', 'order-3', 'order-4', 'order-5', 'order-6', 'order-7'].find((candidate) => decide(5, 'slow-down', 'GET /slow', candidate, 0.5))!
    const single = closing(await startProxy({ targets: [setting.upstream!.url], config }))
    const [a, b] = [await replica({}, config), await replica({}, config)]
    const running = (report: Report) => report.calls.map((call) => ({ id: call.id, route: call.route, ordinal: call.ordinal, key: call.key, method: call.method, path: new URL(call.url).pathname + new URL(call.url).search, outcome: call.outcome, status: call.status, fault: call.fault, kind: call.kind, parent: call.parent }))
    const headers = { 'x-toolstorm-run': 'busy', 'x-toolstorm-key': key }
    await (await fetch(`${single.url}/items/first`, { headers: { 'x-toolstorm-run': 'busy' } })).arrayBuffer()
    const alone = fetch(`${single.url}/slow?ms=600`, { headers }).then((response) => response.arrayBuffer())
    await (await fetch(`${b.url}/items/first`, { headers: { 'x-toolstorm-run': 'busy' } })).arrayBuffer()
    const shared = fetch(`${a.url}/slow?ms=600`, { headers }).then((response) => response.arrayBuffer())
    await expect.poll(() => setting.upstream!.hits('/slow'), { timeout: 1000, interval: 5 }).toBe(2)
    const expected = (await (await admin(single, '/report?run=busy')).json()) as Report
    expect(expected.calls.map((call) => call.outcome)).toEqual(['response', 'running'])
    // B never served the slow call: A is serving it.
    const merged = (await (await admin(b, '/report?run=busy')).json()) as Report
    expect(running(merged)).toEqual(running(expected))
    expect(merged.calls[1]).toMatchObject({ id: 2, outcome: 'running', fault: 'slow-down', kind: 'latency', key })
    await Promise.all([alone, shared])
    const done = await settledReport(b, 'busy', 2)
    await expect.poll(async () => ((await (await admin(b, '/report?run=busy')).json()) as Report).calls.map((call) => [call.id, call.outcome, call.status]), { timeout: 1000, interval: 20 }).toEqual([
      [1, 'response', 200],
      [2, 'response', 200],
    ])
    expect(done.calls).toHaveLength(2)
  })

  it('shares a run through Redis on a unix socket', async () => {
    const dir = await temporaryFolder('toolstorm-redis-')
    const local = closing(await startRedis({ unixSocket: path.join(dir, 'redis.sock') }))
    const options = { targets: [setting.upstream!.url], config: { rules: [{ name: 'second', route: 'GET /items/*', kind: 'unavailable' as const, calls: [2] }] }, state: { url: local.url } }
    const a = closing(await startProxy(options))
    const b = closing(await startProxy(options))
    expect([(await fetch(`${a.url}/items/u`)).status, (await fetch(`${b.url}/items/u`)).status]).toEqual([200, 503])
  })

  it('lets a run expire --state-ttl seconds after its last call', async () => {
    const proxy = await replica({ state: { url: setting.redis!.url, prefix: 'ttl', ttlSeconds: 1 } }, { rules: [] })
    await (await fetch(`${proxy.url}/items/x`, { headers: { 'x-toolstorm-run': 'brief' } })).arrayBuffer()
    await settledReport(proxy, 'brief', 1)
    expect(((await (await admin(proxy, '/runs')).json()) as { runs: unknown[] }).runs).toEqual([{ id: 'brief', calls: 1 }])
    // Redis expires the run's keys once the TTL has passed.
    await expect.poll(async () => ((await (await admin(proxy, '/report?run=brief')).json()) as Report).calls, { timeout: 5000, interval: 50 }).toEqual([])
    expect(((await (await admin(proxy, '/runs')).json()) as { runs: unknown[] }).runs).toEqual([])
  })

  it('forgets a run everywhere when one replica resets it', async () => {
    const [a, b] = [await replica({}, { rules: [] }), await replica({}, { rules: [] })]
    await (await fetch(`${a!.url}/items/x`, { headers: { 'x-toolstorm-run': 'gone' } })).arrayBuffer()
    await settledReport(b!, 'gone', 1)
    expect(((await (await admin(b!, '/runs')).json()) as { runs: unknown[] }).runs).toEqual([{ id: 'gone', calls: 1 }])
    expect((await admin(a!, '/reset?run=gone', { method: 'POST' })).status).toBe(200)
    const forgotten = await admin(b!, '/report?run=gone')
    expect(forgotten.status).toBe(200)
    expect(((await forgotten.json()) as Report).calls).toEqual([])
    // The run starts again at ordinal 1 on any replica.
    await (await fetch(`${b!.url}/items/x`, { headers: { 'x-toolstorm-run': 'gone' } })).arrayBuffer()
    expect((await settledReport(a!, 'gone', 1)).calls.map((call) => [call.id, call.ordinal])).toEqual([[1, 1]])
  })

  it('waits for one Redis round trip per pass-through exchange and writes the finished call after the response', async () => {
    const proxy = await replica({}, { rules: [{ name: 'elsewhere', route: 'POST /ship', kind: 'unavailable' }] })
    const state = proxy.state!
    await (await fetch(`${proxy.url}/items/warm`)).arrayBuffer()
    await settledReport(proxy, 'default', 1)
    const before = state.roundTrips
    for (let i = 0; i < 10; i++) await (await fetch(`${proxy.url}/items/${i}`)).arrayBuffer()
    const awaited = state.roundTrips - before
    // One BEGIN the exchange waits for, then one FINISH written after the response (not waited for;
    // the last exchange's may still be on its way when the loop ends).
    expect(awaited).toBeGreaterThanOrEqual(19)
    await expect.poll(() => state.roundTrips - before, { timeout: 5000, interval: 5 }).toBe(20)
    expect((await settledReport(proxy, 'default', 11)).calls).toHaveLength(11)
  })

  it('brings PUT /rules on one replica to the others within a second', async () => {
    const [a, b] = [await replica({}, { rules: [] }), await replica({}, { rules: [] })]
    expect((await fetch(`${b!.url}/items/x`)).status).toBe(200)
    const put = await admin(a!, '/rules', { method: 'PUT', body: JSON.stringify({ rules: [{ name: 'down', route: 'GET /items/*', kind: 'unavailable' }] }) })
    expect(put.status).toBe(200)
    const deadline = Date.now() + 1000
    let status = 0
    while (Date.now() < deadline && status !== 503) {
      status = (await fetch(`${b!.url}/items/x`)).status
      if (status !== 503) await new Promise((resolve) => setTimeout(resolve, 25))
    }
    expect(status).toBe(503)
    expect(b!.storm.rules.map((rule) => rule.name)).toEqual(['down'])
    // The dashboard's rules editor publishes too.
    const edited = await admin(b!, '/dashboard/rules', { method: 'PUT', body: JSON.stringify({ rules: [{ name: 'busy', route: 'GET /items/*', kind: 'rate_limit', delay: 1 }] }) })
    expect(edited.status).toBe(200)
    await expect.poll(() => a!.storm.rules.map((rule) => rule.name), { timeout: 1000, interval: 25 }).toEqual(['busy'])
  })

  it('picks up rules whose pub/sub message it missed, from the version key, within a second', async () => {
    const proxy = await replica({}, { rules: [] })
    // A new version written without the nudge, as when a replica was disconnected when it was sent.
    const writer = createClient({ url: setting.redis!.url })
    await writer.connect()
    try {
      await writer.multi().hIncrBy('test:rules', 'version', 1).hSet('test:rules', 'config', JSON.stringify(parseConfig({ rules: [{ name: 'quiet', route: 'GET /items/*', kind: 'unavailable' }] }))).exec()
    } finally {
      await writer.close()
    }
    await expect.poll(() => proxy.storm.rules.map((rule) => rule.name), { timeout: 1000, interval: 25 }).toEqual(['quiet'])
    expect((await fetch(`${proxy.url}/items/x`)).status).toBe(503)
  })

  it('refuses to start when Redis is unreachable, naming the URL without its password', async () => {
    const port = setting.redis!.port
    await setting.redis!.kill()
    const error = await startProxy({ targets: [setting.upstream!.url], state: { url: `redis://:hunter2@127.0.0.1:${port}/3` } }).catch((e: unknown) => e)
    expect(error).toMatchObject({ code: 'ERR_STATE_UNAVAILABLE', exitCode: 2 })
    expect((error as Error).message).toBe(`Failed to reach the state store redis://***@127.0.0.1:${port}/3 at start: ECONNREFUSED. Start Redis there, or fix --state.`)
  })

  it('answers 503 ERR_STATE_UNAVAILABLE while Redis is down, counts it, and resumes when Redis returns', async () => {
    const proxy = await replica({}, { rules: [] })
    expect((await fetch(`${proxy.url}/items/a`, { headers: { 'x-toolstorm-run': 'down' } })).status).toBe(200)
    await setting.redis!.kill()
    const refused = await fetch(`${proxy.url}/items/b`, { headers: { 'x-toolstorm-run': 'down' } })
    expect(refused.status).toBe(503)
    const body = (await refused.json()) as { error: { code: string; message: string } }
    expect(body.error.code).toBe('ERR_STATE_UNAVAILABLE')
    expect(body.error.message).toContain(`the state store ${setting.redis!.url}`)
    expect(setting.upstream!.hits('/items/b')).toBe(0)
    // A run's own rules the store could not keep are set nowhere, and the caller is told.
    const own = await admin(proxy, '/rules?run=down', { method: 'PUT', body: JSON.stringify({ rules: [{ name: 'x', route: 'GET /items/*', kind: 'unavailable' }] }) })
    expect([own.status, ((await own.json()) as { error: { code: string } }).error.code]).toEqual([503, 'ERR_STATE_UNAVAILABLE'])
    expect(proxy.storm.decider.hasRunConfig('down')).toBe(false)
    await setting.redis!.restart()
    let status = 0
    for (let attempt = 0; attempt < 100 && status !== 200; attempt++) {
      status = (await fetch(`${proxy.url}/items/c`, { headers: { 'x-toolstorm-run': 'down' } })).status
      if (status !== 200) await new Promise((resolve) => setTimeout(resolve, 50))
    }
    expect(status).toBe(200)
    // Redis restarted empty: the run starts again there, with the refusals counted.
    const report = (await (await admin(proxy, '/report?run=down')).json()) as Report
    expect(report.stateUnavailable).toBeGreaterThanOrEqual(1)
  })

  it('passes requests through untouched while Redis is down with --state-unavailable=pass', async () => {
    const proxy = await replica({ stateUnavailable: 'pass' }, { rules: [{ name: 'down', route: 'GET /items/*', kind: 'unavailable' }] })
    expect((await fetch(`${proxy.url}/items/a`)).status).toBe(503)
    await setting.redis!.kill()
    const passed = await fetch(`${proxy.url}/items/b`)
    expect(passed.status).toBe(200)
    expect(setting.upstream!.hits('/items/b')).toBe(1)
  })

  it("never passes a run's call budget on calls a replica passed through while Redis was silent: every replica's report counts them once Redis answers, and the budget fails", async () => {
    const config: StormConfigInput = { maxCalls: 3, rules: [] }
    const [a, b] = [await replica({ stateUnavailable: 'pass' }, config), await replica({ stateUnavailable: 'pass' }, config)]
    const send = async (proxy: ProxyServer, run: string, path: string) => {
      const response = await fetch(proxy.url + path, { headers: { 'x-toolstorm-run': run } })
      await response.arrayBuffer()
      return response.status
    }
    expect([await send(a!, 'lost', '/items/1'), await send(b!, 'lost', '/items/2')]).toEqual([200, 200])
    // Both calls finished in Redis before it goes silent (a FINISH past its deadline would be counted too).
    await settledReport(a!, 'lost', 2)
    const thaw = setting.redis!.freeze()
    // Passed through untouched on A: the agent's 3rd and 4th calls, over its budget of 3.
    expect([await send(a!, 'lost', '/items/3'), await send(a!, 'lost', '/items/4')]).toEqual([200, 200])
    expect(setting.upstream!.hits('/items/4')).toBe(1)
    await thaw()
    // Redis answers A again, for another run: the run that lost calls has none more on A.
    let status = 0
    for (let attempt = 0; attempt < 100 && status !== 200; attempt++) {
      status = await send(a!, 'other', '/items/x')
      if (status !== 200) await new Promise((resolve) => setTimeout(resolve, 50))
    }
    expect(status).toBe(200)
    const read = async () => (await (await admin(b!, '/report?run=lost')).json()) as Report
    await expect.poll(async () => (await read()).stateUnavailable, { timeout: 2000, interval: 50 }).toBe(2)
    const report = await read()
    expect(report.calls.length).toBe(2)
    const verdict = contract(report).atMostCalls(3).atMostCalls(2, { route: 'GET /items/*' }).noDuplicateEffects().toJSON()
    expect(verdict.passed).toBe(false)
    expect(verdict.checks.map((check) => [check.name, check.passed])).toEqual([
      ['Call budget', false],
      ['Call budget: GET /items/*', false],
      ['No duplicate side effects', false],
    ])
    expect(verdict.checks[0]!.detail).toBe('2 / 3 calls, but 2 exchange(s) were served while the shared state store was unreachable, uncounted, so the count is unknown')
  })

  it('decides draws, an ordinal and a limit per route the same over 2 replicas as one proxy, with another route interleaved', async () => {
    const config: StormConfigInput = {
      seed: 11,
      maxCalls: 40,
      rules: [
        { name: 'second-a', route: 'GET /a', kind: 'unavailable', calls: [2] },
        { name: 'flaky-a', route: 'GET /a', kind: 'unavailable', probability: 0.5 },
        { name: 'flaky-b', route: 'POST /b', kind: 'rate_limit', probability: 0.5, limit: 2, delay: 1 },
        { name: 'after-b', route: 'POST /b', kind: 'unavailable', calls: [3, 5, 6] },
      ],
    }
    const single = closing(await startProxy({ targets: [setting.upstream!.url], config }))
    const replicas = [await replica({}, config), await replica({}, config)]
    const steps = ['a', 'other', 'b', 'a', 'b', 'other', 'b', 'a', 'b', 'b', 'a', 'other', 'a', 'b', 'a', 'b', 'a', 'other', 'a', 'b']
    const drive2 = async (proxies: ProxyServer[], run: string, only = steps) => {
      const statuses: number[] = []
      let i = 0
      for (const step of only) {
        const proxy = proxies[i++ % proxies.length] as ProxyServer
        const response = await fetch(`${proxy.url}/${step}`, { method: step === 'b' ? 'POST' : 'GET', headers: { 'x-toolstorm-run': run }, ...(step === 'b' ? { body: '{}' } : {}) })
        await response.arrayBuffer()
        statuses.push(response.status)
      }
      return statuses
    }
    const alone = await drive2([single], 'det')
    const shared = await drive2(replicas, 'det')
    expect(shared).toEqual(alone)
    const expected = (await (await admin(single, '/report?run=det')).json()) as Report
    const faulted = (report: Report) => report.calls.filter((call) => call.injected).map((call) => `${call.route}#${call.ordinal}:${call.fault}`)
    expect(faulted(expected).length).toBeGreaterThan(3)
    for (const proxy of replicas) {
      const merged = await settledReport(proxy, 'det', expected.calls.length)
      expect(faulted(merged)).toEqual(faulted(expected))
      expect(merged.coverage).toEqual(expected.coverage)
      expect(contract(merged).requireTriggered().atMostCalls(20).toJSON()).toEqual(contract(expected).requireTriggered().atMostCalls(20).toJSON())
    }
    // Independent per route: without the interleaved route, the same calls of /a and /b are faulted.
    await drive2(replicas, 'det-alone', steps.filter((step) => step !== 'other'))
    expect(faulted(await settledReport(replicas[1]!, 'det-alone', 16))).toEqual(faulted(expected))
  })
})
