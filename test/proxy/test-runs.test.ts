/**
 * One proxy, many tests: each test is a run of its own, named by the addresses its clients were
 * given (no header added), with rules of its own, an empty report before its first call, and
 * contracts run by the proxy. This is what the pytest plugin builds on (docs/python.md).
 */
import { describe, expect, it, onTestFinished } from 'vitest'
import { ProxyAgent, request as undiciRequest } from 'undici'
import { createInMemoryCertificateAuthority } from '../../src/proxy/tls/certificate-authority.js'
import { contract } from '../../src/contracts/contract.js'
import type { StormConfigInput } from '../../src/engine/schema/config.js'
import type { Report } from '../../src/engine/schema/report.js'
import { startProxy, type ProxyServer } from '../../src/proxy/proxy-server.js'
import { startProxied } from '../helpers/proxied.js'
import { startUpstream, type Upstream } from '../helpers/upstream.js'
import { closing } from '../helpers/teardown.js'


const BUSY: StormConfigInput = { rules: [{ name: 'busy', route: 'GET /items/*', kind: 'rate_limit', calls: [1] }] }

async function status(url: string, init: Parameters<typeof undiciRequest>[1] = {}): Promise<number> {
  const response = await undiciRequest(url, init)
  await response.body.dump()
  return response.statusCode
}

function routesOf(report: Report): Array<[string, number | null]> {
  return report.calls.map((call) => [call.route, call.status])
}

describe('a run named by the address the client was given', () => {
  it('reverse mode: a /_run/<id>/ prefix puts the call in that run and is taken off before forwarding', async () => {
    const env = closing(await startProxied('reverse', BUSY))
    expect(await status(`${env.proxy.url}/_run/test-1/items/a?q=1`)).toBe(429)
    expect(await status(`${env.proxy.url}/_run/test-2/items/a`)).toBe(429)
    expect(await status(`${env.proxy.url}/_run/test-1/items/a`)).toBe(200)
    expect(env.upstream.requests.map((r) => r.url)).toEqual(['/items/a'])
    expect(routesOf(await env.report('test-1'))).toEqual([
      ['GET /items/a', 429],
      ['GET /items/a', 200],
    ])
    expect(routesOf(await env.report('test-2'))).toEqual([['GET /items/a', 429]])
    expect((await env.report()).calls).toEqual([])
  })

  it('forward mode: /_run/<id>/http/<host:port>/ names the run and the upstream, and routes are the upstream paths', async () => {
    const env = closing(await startProxied('forward', BUSY))
    const port = new URL(env.upstream.url).port
    expect(await status(`${env.proxy.url}/_run/a/http/127.0.0.1:${port}/items/x`)).toBe(429)
    expect(await status(`${env.proxy.url}/_run/a/http/127.0.0.1:${port}/items/x`)).toBe(200)
    const report = await env.report('a')
    expect(report.calls.map((call) => [call.route, call.url, call.status])).toEqual([
      ['GET /items/x', `${env.upstream.url}/items/x`, 429],
      ['GET /items/x', `${env.upstream.url}/items/x`, 200],
    ])
    // A path that names no upstream, and a run id that is not one, are refused naming the form.
    const bare = await fetch(`${env.proxy.url}/_run/a/items/x`)
    expect(bare.status).toBe(400)
    expect(((await bare.json()) as { error: { message: string } }).error.message).toContain('/_run/a/http/<host:port>/<path>')
    const bad = await fetch(`${env.proxy.url}/_run/a%20b/http/127.0.0.1:${port}/items/x`)
    expect(bad.status).toBe(400)
    expect(((await bad.json()) as { error: { message: string } }).error.message).toContain('is not a run id')
  })

  it('forward mode: a prefix that names the proxy itself is refused as a loop (508)', async () => {
    const env = closing(await startProxied('forward', BUSY))
    const own = new URL(env.proxy.url).port
    expect(await status(`${env.proxy.url}/_run/a/http/127.0.0.1:${own}/items/x`)).toBe(508)
  })

  it('forward mode: the user name of the proxy credentials names the run (HTTP_PROXY=http://<run>:x@host:port)', async () => {
    const env = closing(await startProxied('forward', BUSY))
    const [one, two] = [new URL(env.proxy.url), new URL(env.proxy.url)]
    // A password too: undici and urllib send no credentials without one (it is ignored).
    one.username = 'worker-1'
    one.password = 'x'
    two.username = 'worker-2'
    two.password = 'toolstorm'
    const agents = [new ProxyAgent({ uri: one.href, proxyTunnel: false }), new ProxyAgent({ uri: two.href, proxyTunnel: false })]
    for (const agent of agents) onTestFinished(() => agent.close())
    expect(await status(`${env.upstream.url}/items/a`, { dispatcher: agents[0] })).toBe(429)
    expect(await status(`${env.upstream.url}/items/a`, { dispatcher: agents[1] })).toBe(429)
    expect(await status(`${env.upstream.url}/items/a`, { dispatcher: agents[0] })).toBe(200)
    // A run the request names itself wins over the credentials' (which may be there for other reasons).
    expect(await status(`${env.upstream.url}/items/b`, { dispatcher: agents[0], headers: { 'x-toolstorm-run': 'by-header' } })).toBe(429)
    expect((await env.report('worker-1')).calls).toHaveLength(2)
    expect((await env.report('worker-2')).calls).toHaveLength(1)
    expect(routesOf(await env.report('by-header'))).toEqual([['GET /items/b', 429]])
    // Credentials are hop-by-hop: the upstream never sees them.
    expect(env.upstream.requests.every((r) => r.headers['proxy-authorization'] === undefined)).toBe(true)
  })

  it('a CONNECT tunnel carries the run its proxy credentials named to every request inside it', async () => {
    const plain = await startUpstream()
    onTestFinished(() => plain.close())
    const proxy = await startProxy({ config: BUSY, ca: await createInMemoryCertificateAuthority(), connectPorts: [plain.port] })
    onTestFinished(() => proxy.close())
    const uri = new URL(proxy.url)
    uri.username = 'tunnelled'
    uri.password = 'x'
    const agent = new ProxyAgent({ uri: uri.href }) // tunnels http:// URLs through CONNECT
    onTestFinished(() => agent.close())
    expect(await status(`${plain.url}/items/a`, { dispatcher: agent })).toBe(429)
    expect(await status(`${plain.url}/items/a`, { dispatcher: agent })).toBe(200)
    expect(routesOf(proxy.storm.report('tunnelled'))).toEqual([
      ['GET /items/a', 429],
      ['GET /items/a', 200],
    ])
  })

  it('the path prefix wins over x-toolstorm-run; the header wins over the active run', async () => {
    const env = closing(await startProxied('reverse', { rules: [] }))
    await status(`${env.proxy.url}/_run/by-path/items/a`, { headers: { 'x-toolstorm-run': 'by-header' } })
    expect((await env.admin('/active-run?run=active', { method: 'PUT' })).status).toBe(200)
    await status(`${env.proxy.url}/items/b`, { headers: { 'x-toolstorm-run': 'by-header' } })
    await status(`${env.proxy.url}/items/c`)
    expect(await (await env.admin('/active-run')).json()).toEqual({ run: 'active' })
    expect((await env.admin('/active-run', { method: 'DELETE' })).status).toBe(200)
    await status(`${env.proxy.url}/items/d`)
    expect(routesOf(await env.report('by-path'))).toEqual([['GET /items/a', 200]])
    expect(routesOf(await env.report('by-header'))).toEqual([['GET /items/b', 200]])
    expect(routesOf(await env.report('active'))).toEqual([['GET /items/c', 200]])
    expect(routesOf(await env.report())).toEqual([['GET /items/d', 200]])
  })
})

describe('rules of one run (PUT /rules?run=ID)', () => {
  let upstream: Upstream
  let proxy: ProxyServer
  const admin = (path: string, init: RequestInit = {}) => fetch(proxy.adminUrl + path, { ...init, headers: { authorization: `Bearer ${proxy.token}`, ...(init.headers as Record<string, string>) } })
  const put = (path: string, body: unknown) => admin(path, { method: 'PUT', body: JSON.stringify(body) })
  const start = async () => {
    upstream = await startUpstream()
    proxy = await startProxy({ targets: [upstream.url], config: { seed: 1, rules: [{ name: 'proxy-wide', route: 'GET /other', kind: 'unavailable' }] } })
    onTestFinished(() => upstream.close())
    onTestFinished(() => proxy.close())
  }

  it('decide that run\'s calls only, with its seed, and show in its report; other runs keep the proxy\'s', async () => {
    await start()
    const answer = await put('/rules?run=t1', { seed: 9, rules: [{ name: 'down', route: 'GET /items/*', kind: 'unavailable', calls: [2] }] })
    expect(answer.status).toBe(200)
    expect(await answer.json()).toEqual({ ok: true, run: 't1', rules: 1, warnings: [] })
    const statuses = async (run: string) => [await status(`${proxy.url}/_run/${run}/items/a`), await status(`${proxy.url}/_run/${run}/items/a`)]
    expect(await statuses('t1')).toEqual([200, 503])
    expect(await statuses('t2')).toEqual([200, 200])
    const report = (await (await admin('/report?run=t1')).json()) as Report
    expect(report).toMatchObject({ run: 't1', seed: 9, rules: [{ name: 'down' }], coverage: { down: { eligible: 1, selected: 1, triggered: 1 } } })
    expect(((await (await admin('/report?run=t2')).json()) as Report)).toMatchObject({ seed: 1, rules: [{ name: 'proxy-wide' }] })
    expect(contract(report).requireTriggered().passed).toBe(true)
    // The proxy's rules change: the run keeps its own.
    expect((await put('/rules', { rules: [] })).status).toBe(200)
    expect(await status(`${proxy.url}/_run/t1/items/b`)).toBe(200)
    expect(((await (await admin('/rules?run=t1')).json()) as { own: boolean; seed: number; rules: unknown[] })).toMatchObject({ run: 't1', own: true, seed: 9, rules: [{ name: 'down' }] })
    // DELETE: back to the proxy's rules.
    expect((await admin('/rules?run=t1', { method: 'DELETE' })).status).toBe(200)
    expect(((await (await admin('/rules?run=t1')).json()) as { own: boolean; rules: unknown[] })).toMatchObject({ own: false, rules: [] })
  })

  it('apply to a run before its first call, and a reset keeps them', async () => {
    await start()
    await put('/rules?run=early', { rules: [{ name: 'first', route: 'GET /items/*', kind: 'rate_limit', calls: [1] }] })
    expect(((await (await admin('/report?run=early')).json()) as Report).coverage).toEqual({ first: { eligible: 0, selected: 0, triggered: 0 } })
    expect(await status(`${proxy.url}/_run/early/items/a`)).toBe(429)
    expect((await admin('/reset?run=early', { method: 'POST' })).status).toBe(200)
    expect(await status(`${proxy.url}/_run/early/items/a`)).toBe(429)
  })

  it('are refused when they try to change redaction or MCP detection, or the run id is not one', async () => {
    await start()
    const redact = await put('/rules?run=t1', { rules: [], redact: { keys: ['x'] } })
    expect(redact.status).toBe(400)
    expect(((await redact.json()) as { error: { code: string; message: string } }).error).toMatchObject({ code: 'ERR_CONFIG_INVALID', message: expect.stringContaining('$.redact: a run\'s rules cannot set "redact"') })
    const invalid = await put('/rules?run=t1', { rules: [{ name: 'x', route: 'GET /a', kind: 'nope' }] })
    expect(invalid.status).toBe(400)
    expect(((await invalid.json()) as { error: { message: string } }).error.message).toContain('Failed to load rules from PUT /rules?run=t1: $.rules[0].kind')
    expect((await put('/rules?run=a%20b', { rules: [] })).status).toBe(400)
    expect((await admin('/active-run', { method: 'PUT' })).status).toBe(400)
  })
})

describe('POST /contract?run=ID', () => {
  it('runs the checks as contract(report) does, in order, custom checks included', async () => {
    const env = closing(await startProxied('reverse'))
    await fetch(`${env.base}/items/a`, { headers: { 'x-toolstorm-run': 'c1' } })
    await fetch(`${env.base}/items/a`, { headers: { 'x-toolstorm-run': 'c1' } })
    const checks = [{ type: 'requireTriggered' }, { type: 'atMostCalls', count: 1 }, { type: 'noDuplicateEffects' }, { type: 'check', name: 'Answer shown', passed: true }]
    const answer = await env.admin('/contract?run=c1', { method: 'POST', body: JSON.stringify({ checks }) })
    expect(answer.status).toBe(200)
    const expected = contract(await env.report('c1')).requireTriggered().atMostCalls(1).noDuplicateEffects().check('Answer shown', true).toResult()
    expect(await answer.json()).toEqual({ run: 'c1', ...expected })
    expect(expected.passed).toBe(false)
    // A failing check comes with what it names, as `toolstorm check` prints it: here the calls over the budget.
    expect(expected.checks[2]).toMatchObject({ name: 'Call budget', passed: false, details: [expect.stringMatching(/^call 1 {2}GET \/items\/a {2}/), expect.stringMatching(/^call 2 {2}GET \/items\/a {2}/)] })
    expect(expected.checks[3]).not.toHaveProperty('details')
    expect(expected.checks.map((check) => check.name)).toEqual(['Fault exercised: items-busy', 'Fault exercised: lost-ack', 'Call budget', 'No duplicate side effects', 'Answer shown'])
  })

  it('refuses an unknown check naming the field, and an empty contract does not pass', async () => {
    const env = closing(await startProxied('reverse'))
    const bad = await env.admin('/contract?run=c1', { method: 'POST', body: JSON.stringify({ checks: [{ type: 'atMostCalls', count: -1 }] }) })
    expect(bad.status).toBe(400)
    expect(((await bad.json()) as { error: { message: string } }).error.message).toContain('$.checks[0].count: expected a nonnegative integer')
    const unknown = await env.admin('/contract', { method: 'POST', body: JSON.stringify({ checks: [{ type: 'noDuplicateEffect' }] }) })
    expect(unknown.status).toBe(400)
    expect(((await unknown.json()) as { error: { message: string } }).error.message).toContain('$.checks[0].type: expected "type" to be one of')
    expect(await (await env.admin('/contract?run=none-yet', { method: 'POST', body: '{"checks": []}' })).json()).toEqual({ run: 'none-yet', passed: false, checks: [] })
  })
})
