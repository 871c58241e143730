import http from 'node:http'
import { describe, expect, it } from 'vitest'
import { contract } from '../../src/contracts/contract.js'
import { startProxied } from '../helpers/proxied.js'
import { closing } from '../helpers/teardown.js'

function rawAdmin(url: string, headers: Record<string, string>, method = 'GET', body?: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers }, (res) => {
      let body = ''
      res.on('data', (c: Buffer) => (body += c))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }))
    })
    req.on('error', reject)
    req.end(body)
  })
}

describe('admin API', () => {
  it('refuses requests without the token with 401 and the error body', async () => {
    const env = closing(await startProxied('reverse'))
    const response = await fetch(`${env.proxy.adminUrl}/report`)
    expect(response.status).toBe(401)
    expect(await response.json()).toEqual({ error: { type: 'admin_error', code: 'ERR_ADMIN_UNAUTHORIZED', message: 'Failed to use the admin API: send the token printed at start as "Authorization: Bearer <token>".' } })
    expect((await fetch(`${env.proxy.adminUrl}/report`, { headers: { authorization: 'Bearer wrong-token-of-some-length' } })).status).toBe(401)
    expect((await fetch(`${env.proxy.adminUrl}/healthz`)).status).toBe(200)
  })

  it('refuses a foreign Host or Origin (DNS rebinding) even with the token', async () => {
    const env = closing(await startProxied('reverse'))
    const auth = { authorization: `Bearer ${env.proxy.token}` }
    const rebound = await rawAdmin(`${env.proxy.adminUrl}/report`, { ...auth, host: 'attacker.example:8788' })
    expect(rebound.status).toBe(403)
    expect(JSON.parse(rebound.body).error.code).toBe('ERR_ADMIN_FORBIDDEN')
    const crossSite = await rawAdmin(`${env.proxy.adminUrl}/report`, { ...auth, origin: 'https://attacker.example' })
    expect(crossSite.status).toBe(403)
    const ok = await rawAdmin(`${env.proxy.adminUrl}/report`, { ...auth, host: `localhost:${new URL(env.proxy.adminUrl).port}` })
    expect(ok.status).toBe(200)
  })

  it('replaces the rules live with PUT /rules, and keeps the old ones when the new file is bad', async () => {
    const env = closing(await startProxied('reverse', { rules: [] }))
    expect((await fetch(`${env.base}/items/a`)).status).toBe(200)
    const bad = await env.admin('/rules', { method: 'PUT', body: JSON.stringify({ rules: [{ name: 'x', route: 'GET /items/*', kind: 'rate_limit', probability: 3 }] }) })
    expect(bad.status).toBe(400)
    expect(await bad.json()).toMatchObject({ error: { code: 'ERR_CONFIG_INVALID', message: expect.stringContaining('$.rules[0].probability: expected a probability between 0 and 1') } })
    expect((await fetch(`${env.base}/items/a`)).status).toBe(200)
    const good = await env.admin('/rules', { method: 'PUT', body: JSON.stringify({ rules: [{ name: 'down', route: 'GET /items/*', kind: 'unavailable' }] }) })
    expect(good.status).toBe(200)
    expect((await fetch(`${env.base}/items/a`)).status).toBe(503)
    const yaml = await env.admin('/rules', { method: 'PUT', headers: { 'content-type': 'application/yaml' }, body: 'rules:\n  - {name: busy, route: "GET /items/*", kind: rate_limit, delay: 1}\n' })
    expect(yaml.status).toBe(200)
    expect((await fetch(`${env.base}/items/a`)).status).toBe(429)
  })

  it('shows the rules redacted: no literal secret or credential in GET /rules', async () => {
    const secret = 'lit-' + 'eral-secret-value'
    const token = 'sk-' + 'proj-' + 'Q'.repeat(24) + 'x9y8z7'
    const env = closing(await startProxied('reverse', { redact: { keys: [], secrets: [secret] }, rules: [{ name: 'fake', route: 'GET /items/*', kind: 'replace', replacement: { note: `use ${token} and ${secret}` } }] }))
    const text = await (await env.admin('/rules')).text()
    expect(text).not.toContain(secret)
    expect(text).not.toContain(token)
    expect(JSON.parse(text)).toMatchObject({ redact: { secrets: ['[REDACTED]'] }, rules: [{ name: 'fake' }] })
  })

  it('lets in-flight requests finish under the rules they started with', async () => {
    const env = closing(await startProxied('reverse', { rules: [{ name: 'lag', route: 'GET /items/*', kind: 'latency', delay: 0.4 }] }))
    const inFlight = fetch(`${env.base}/items/slow`)
    // Once it began, under the rules of then.
    await expect.poll(() => env.proxy.storm.report().calls.map((call) => [call.route, call.outcome]), { timeout: 5000, interval: 5 }).toEqual([['GET /items/slow', 'running']])
    expect((await env.admin('/rules', { method: 'PUT', body: JSON.stringify({ rules: [{ name: 'down', route: 'GET /items/*', kind: 'unavailable' }] }) })).status).toBe(200)
    expect((await inFlight).status).toBe(200)
    expect((await fetch(`${env.base}/items/b`)).status).toBe(503)
    expect(env.upstream.hits()).toBe(1)
  })

  it('forgets a run on POST /reset, and answers an empty report for a run with no calls', async () => {
    const env = closing(await startProxied('reverse'))
    await fetch(`${env.base}/items/a`, { headers: { 'x-toolstorm-run': 'w1' } })
    expect((await env.report('w1')).calls).toHaveLength(1)
    expect((await env.admin('/reset?run=w1', { method: 'POST' })).status).toBe(200)
    const forgotten = await env.admin('/report?run=w1')
    expect(forgotten.status).toBe(200)
    expect(await forgotten.json()).toMatchObject({ kind: 'toolstorm.report', run: 'w1', calls: [], effects: [], coverage: { 'items-busy': { eligible: 0, selected: 0, triggered: 0 } } })
    // A test that made no call at all reads its report as any other.
    expect(await (await env.admin('/report?run=never-called')).json()).toMatchObject({ run: 'never-called', calls: [] })
    expect((await env.admin('/nope')).status).toBe(404)
  })

  it('accepts effects by call id without the token, and refuses unknown call ids and bad bodies', async () => {
    const env = closing(await startProxied('reverse'))
    const unknown = await fetch(`${env.proxy.adminUrl}/effects`, { method: 'POST', body: JSON.stringify({ name: 'shipment', key: 'k', call: 'made-up' }) })
    expect(unknown.status).toBe(400)
    expect(((await unknown.json()) as { error: { code: string } }).error.code).toBe('ERR_EFFECT_INVALID')
    const malformed = await fetch(`${env.proxy.adminUrl}/effects`, { method: 'POST', body: '{"name":' })
    expect(malformed.status).toBe(400)
    expect(((await malformed.json()) as { error: { code: string } }).error.code).toBe('ERR_JSON_INVALID')
    const echo = (await (await fetch(`${env.base}/echo`, { method: 'POST', body: 'x' })).json()) as { headers: Record<string, string> }
    const call = echo.headers['x-toolstorm-call'] as string
    const ok = await fetch(`${env.proxy.adminUrl}/effects`, { method: 'POST', body: JSON.stringify({ name: 'note', key: 'n-1', call }) })
    expect(ok.status).toBe(201)
    expect((await env.report()).effects).toMatchObject([{ name: 'note', key: 'n-1', call: 1 }])
  })
  it('counts a refused effect report in the run its call names, else in every run kept then, and the contracts on effects fail', async () => {
    const env = closing(await startProxied('reverse'))
    const callIn = async (run: string) => ((await (await fetch(`${env.base}/echo`, { method: 'POST', body: 'x', headers: { 'x-toolstorm-run': run } })).json()) as { headers: Record<string, string> }).headers['x-toolstorm-call'] as string
    const post = (body: string) => fetch(`${env.proxy.adminUrl}/effects`, { method: 'POST', body })
    const [a, b] = [await callIn('a'), await callIn('b')]
    expect((await post(JSON.stringify({ name: 'shipment', key: 'o-1', call: a }))).status).toBe(201)
    // A call id no exchange of this proxy has (stale, or another proxy's) and a malformed body name no run: every run kept counts them.
    expect((await post(JSON.stringify({ name: 'shipment', key: 'o-2', call: 'made-up' }))).status).toBe(400)
    expect((await post('{"name":')).status).toBe(400)
    // One naming a call is that call's run's alone.
    expect((await post(JSON.stringify({ name: 'x'.repeat(201), key: 'o-3', call: b }))).status).toBe(400)
    // A run begun after them has nothing refused.
    await callIn('c')
    expect((await env.report('a')).refusedEffects).toEqual({ count: 2, first: 'Failed to record an effect: the call id names no live exchange. Pass the x-toolstorm-call header of the request being served.' })
    expect((await env.report('b')).refusedEffects).toMatchObject({ count: 3 })
    expect((await env.report('c')).refusedEffects).toBeUndefined()
    const checks = [{ type: 'noDuplicateEffects' }, { type: 'atMostEffects', name: 'shipment', count: 1 }, { type: 'effectsRequireApproval', effect: 'shipment', route: 'GET /ok' }, { type: 'atMostCalls', count: 5 }]
    const answer = (await (await env.admin('/contract?run=a', { method: 'POST', body: JSON.stringify({ checks }) })).json()) as { passed: boolean; checks: Array<{ passed: boolean; detail: string }> }
    expect(answer.passed).toBe(false)
    expect(answer.checks.map((check) => check.passed)).toEqual([false, false, false, true])
    expect(answer.checks[0]!.detail).toBe(
      '0 duplicate effect(s) across 1 commits, but 2 effect report(s) were refused while the run was kept, so its effects may be incomplete (first: Failed to record an effect: the call id names no live exchange. Pass the x-toolstorm-call header of the request being served.)',
    )
    expect(contract(await env.report('c')).noDuplicateEffects().passed).toBe(true)
  })

  it('counts an effect report refused for its Host or its query, so the contracts on effects fail, but not a web page\'s', async () => {
    // A tool server in a container reports to the proxy by a name it was not told to allow: 403, and the commit is missing.
    const env = closing(await startProxied('reverse'))
    const callIn = async (run: string) => ((await (await fetch(`${env.base}/echo`, { method: 'POST', body: 'x', headers: { 'x-toolstorm-run': run } })).json()) as { headers: Record<string, string> }).headers['x-toolstorm-call'] as string
    const [a, b] = [await callIn('a'), await callIn('b')]
    const report = (call: string) => JSON.stringify({ name: 'shipment', key: 'o-1', call })
    const foreign = await rawAdmin(`${env.proxy.adminUrl}/effects`, { host: 'toolstorm.internal:8788' }, 'POST', report(a))
    expect(foreign.status).toBe(403)
    // A browser sends Origin with every POST: a page that posts reports is refused without counting, so it cannot fail a run's contracts.
    const page = await rawAdmin(`${env.proxy.adminUrl}/effects`, { origin: 'https://attacker.example' }, 'POST', report(b))
    expect(page.status).toBe(403)
    expect((await fetch(`${env.proxy.adminUrl}/effects?run=b`, { method: 'POST', body: report(b) })).status).toBe(400)
    expect((await env.report('a')).refusedEffects).toEqual({ count: 1, first: expect.stringContaining('the Host or Origin header names another site') })
    expect((await env.report('b')).refusedEffects).toEqual({ count: 1, first: expect.stringContaining('unknown query parameter "run"') })
    expect(contract(await env.report('a')).noDuplicateEffects().passed).toBe(false)
  })
})

describe('runs', () => {
  it('give parallel workers their own ordinals, coverage and report, and never reach the upstream', async () => {
    const env = closing(await startProxied('reverse', { rules: [{ name: 'first-only', route: 'GET /items/*', kind: 'unavailable', calls: [1] }] }))
    const statuses = await Promise.all(
      ['a', 'b', 'c'].flatMap((worker) => [1, 2].map(() => worker)).map(async (worker) => [worker, (await fetch(`${env.base}/items/x`, { headers: { 'x-toolstorm-run': worker } })).status] as const),
    )
    for (const worker of ['a', 'b', 'c']) {
      expect(statuses.filter(([w]) => w === worker).map(([, s]) => s).sort()).toEqual([200, 503])
      const report = await env.report(worker)
      expect(report.run).toBe(worker)
      expect(report.coverage['first-only']).toEqual({ eligible: 1, selected: 1, triggered: 1 })
    }
    expect(env.upstream.requests.every((r) => r.headers['x-toolstorm-run'] === undefined)).toBe(true)
    const runs = (await (await env.admin('/runs')).json()) as { runs: Array<{ id: string }> }
    expect(runs.runs.map((r) => r.id).sort()).toEqual(['a', 'b', 'c'])
  })
})
