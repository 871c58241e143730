/**
 * Real clients reach a real HTTPS upstream through the forward proxy, which intercepts CONNECT
 * with the toolstorm CA. Each one sees a 429 on one route and a lost acknowledgement on another,
 * exactly as over plain HTTP.
 */
import { execFile } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import https from 'node:https'
import type net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import OpenAI from 'openai'
import { fetch as undiciFetch, getGlobalDispatcher, ProxyAgent, request as undiciRequest, setGlobalDispatcher } from 'undici'
import { describe, expect, it } from 'vitest'
import { ROOT } from '../helpers/cli.js'
import { startHttpsProxied, upstreamTestCa, type HttpsProxied } from '../helpers/https-proxied.js'
import { startUpstream } from '../helpers/upstream.js'
import { startProxy } from '../../src/proxy/proxy-server.js'
import { createInMemoryCertificateAuthority } from '../../src/proxy/tls/certificate-authority.js'
import { closing } from '../helpers/teardown.js'

const run = promisify(execFile)

/** A real HTTPS server that resets the TCP connection once it has read a request: the failure to compare with. */
async function startResettingHttpsServer(): Promise<{ url: string; caPath: string; close(): Promise<void> }> {
  const ca = await upstreamTestCa()
  const dir = await mkdtemp(path.join(os.tmpdir(), 'toolstorm-reset-'))
  const caPath = path.join(dir, 'ca.pem')
  await writeFile(caPath, ca.certPem)
  const tcp = new Map<number, net.Socket>()
  const server = https.createServer(await ca.issue(['127.0.0.1']), (req) => {
    req.resume()
    req.on('end', () => tcp.get(req.socket.remotePort as number)?.resetAndDestroy())
  })
  server.on('connection', (socket: net.Socket) => tcp.set(socket.remotePort as number, socket))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `https://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    caPath,
    close: async () => {
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
      await rm(dir, { recursive: true, force: true })
    },
  }
}
/** What every client must leave behind: the 429 never reached the upstream, the lost write committed once. */
async function expectFaultEvidence(proxied: HttpsProxied): Promise<void> {
  expect(proxied.upstream.hits('/items/a')).toBe(0)
  expect(proxied.upstream.commits).toEqual(['o-1'])
  const report = await proxied.report()
  expect(report.coverage).toEqual({ 'items-busy': { eligible: 1, selected: 1, triggered: 1 }, 'lost-ack': { eligible: 1, selected: 1, triggered: 1 } })
  expect(report.calls.map((c) => [c.route, c.status, c.outcome, c.executed, c.url.startsWith('https://')])).toEqual([
    ['GET /items/a', 429, 'response', false, true],
    ['POST /ship', null, 'reset', true, true],
  ])
  expect(report.effects.map((e) => [e.name, e.key, e.call])).toEqual([['shipment', 'o-1', 2]])
}

describe('real clients through the HTTPS interception', () => {
  it('global fetch with a ProxyAgent dispatcher sees the 429 and the reset', async () => {
    const env = closing(await startHttpsProxied())
    const init = { dispatcher: env.dispatcher } as unknown as RequestInit
    const read = await fetch(`${env.base}/items/a`, init)
    expect(read.status).toBe(429)
    expect(read.headers.get('retry-after')).toBe('2')
    const write = await fetch(`${env.base}/ship`, { ...init, method: 'POST', body: '{"order":"o-1"}' }).then(
      () => null,
      (e: TypeError & { cause?: NodeJS.ErrnoException }) => e,
    )
    expect(write?.message).toBe('fetch failed')
    expect(write?.cause?.code).toBe('ECONNRESET')
    await expectFaultEvidence(env)
  })

  it('global fetch under setGlobalDispatcher, by host name (SNI), sees the 429 and the reset', async () => {
    const env = closing(await startHttpsProxied())
    const previous = getGlobalDispatcher()
    const agent = new ProxyAgent({ uri: env.proxy.url, requestTls: { ca: env.ca.certificatePem } })
    setGlobalDispatcher(agent)
    try {
      const base = `https://localhost:${env.upstream.port}`
      expect((await fetch(`${base}/items/a`)).status).toBe(429)
      await expect(fetch(`${base}/ship`, { method: 'POST', body: '{"order":"o-1"}' })).rejects.toMatchObject({ cause: { code: 'ECONNRESET' } })
    } finally {
      setGlobalDispatcher(previous)
      await agent.close()
    }
    expect(env.upstream.commits).toEqual(['o-1'])
    const report = await env.report()
    expect(report.calls.map((c) => [c.url, c.status, c.outcome])).toEqual([
      [`https://localhost:${env.upstream.port}/items/a`, 429, 'response'],
      [`https://localhost:${env.upstream.port}/ship`, null, 'reset'],
    ])
  })

  it('undici.request and undici.fetch see the 429 and the reset', async () => {
    const env = closing(await startHttpsProxied())
    const read = await undiciRequest(`${env.base}/items/a`, { dispatcher: env.dispatcher })
    expect(read.statusCode).toBe(429)
    expect(read.headers['retry-after-ms']).toBe('2000')
    await read.body.dump()
    await expect(undiciFetch(`${env.base}/ship`, { dispatcher: env.dispatcher, method: 'POST', body: '{"order":"o-1"}' })).rejects.toMatchObject({ cause: { code: 'ECONNRESET' } })
    await expectFaultEvidence(env)
  })

  it('the openai SDK (fetchOptions.dispatcher) sees a RateLimitError and a connection error', async () => {
    const env = closing(await startHttpsProxied({
      seed: 42,
      rules: [
        { name: 'models-busy', route: 'GET /v1/models', kind: 'rate_limit', calls: [1], delay: 1 },
        { name: 'lost-ack', route: 'POST /v1/chat/completions', kind: 'response_lost', calls: [1] },
      ],
    }))
    const client = new OpenAI({ apiKey: 'sk-test-not-a-real-key', baseURL: `${env.base}/v1`, maxRetries: 0, fetchOptions: { dispatcher: env.dispatcher } as never })
    const busy = await client.models.list().then(
      () => null,
      (e: unknown) => e,
    )
    expect(busy).toBeInstanceOf(OpenAI.RateLimitError)
    expect((busy as InstanceType<typeof OpenAI.RateLimitError>).status).toBe(429)
    const lost = await client.chat.completions.create({ model: 'gpt-test', messages: [{ role: 'user', content: 'ship o-1' }], user: 'o-1' }).then(
      () => null,
      (e: unknown) => e,
    )
    expect(lost).toBeInstanceOf(OpenAI.APIConnectionError)
    expect(env.upstream.commits).toEqual(['o-1'])
    const report = await env.report()
    expect(report.coverage).toEqual({ 'models-busy': { eligible: 1, selected: 1, triggered: 1 }, 'lost-ack': { eligible: 1, selected: 1, triggered: 1 } })
    expect(report.effects.map((e) => [e.name, e.key])).toEqual([['completion', 'o-1']])
  })

  it('a child node process with NODE_EXTRA_CA_CERTS and HTTPS_PROXY sees the 429 and the reset', async () => {
    const env = closing(await startHttpsProxied())
    // Node 20's fetch ignores HTTPS_PROXY; EnvHttpProxyAgent reads it (and NO_PROXY).
    const script = `
      import { EnvHttpProxyAgent, setGlobalDispatcher } from 'undici'
      setGlobalDispatcher(new EnvHttpProxyAgent())
      const base = process.argv[1]
      const read = await fetch(base + '/items/a')
      const write = await fetch(base + '/ship', { method: 'POST', body: '{"order":"o-1"}' }).then(() => 'ok', (e) => e.cause?.code ?? e.message)
      console.log(JSON.stringify({ read: [read.status, read.headers.get('retry-after')], write }))
    `
    const childEnv = { ...process.env, NODE_EXTRA_CA_CERTS: env.caPath, HTTPS_PROXY: env.proxy.url, https_proxy: env.proxy.url, NO_PROXY: '', no_proxy: '' }
    const result = await run(process.execPath, ['--input-type=module', '-e', script, env.base], { cwd: ROOT, env: childEnv })
    expect(JSON.parse(result.stdout)).toEqual({ read: [429, '2'], write: 'ECONNRESET' })
    await expectFaultEvidence(env)
  })

  it('curl -x … --cacert sees the 429 and a connection reset', async () => {
    const env = closing(await startHttpsProxied())
    const proxyArgs = ['-x', env.proxy.url, '--cacert', env.caPath]
    const read = await run('curl', ['-s', '-o', '/dev/null', '-w', '%{http_code}', ...proxyArgs, `${env.base}/items/a`], { env: { ...process.env, NO_PROXY: '', no_proxy: '' } })
    expect(read.stdout).toBe('429')
    const write = await run('curl', ['-s', ...proxyArgs, '-X', 'POST', '-d', '{"order":"o-1"}', `${env.base}/ship`], { env: { ...process.env, NO_PROXY: '', no_proxy: '' } }).then(
      () => 0,
      (e: { code: number }) => e.code,
    )
    expect(write).toBe(56) // CURLE_RECV_ERROR: "Connection reset by peer"
    await expectFaultEvidence(env)
  })

  it("Python's urllib with SSL_CERT_FILE and HTTPS_PROXY sees the 429, and the reset a real HTTPS server gives", async () => {
    const env = closing(await startHttpsProxied())
    const script = [
      'import json, sys, urllib.request, urllib.error',
      'base = sys.argv[1]',
      'out = {}',
      'try:',
      '    urllib.request.urlopen(base + "/items/a", timeout=10)',
      'except urllib.error.HTTPError as e:',
      '    out["read"] = [e.code, e.headers.get("Retry-After")]',
      'except ConnectionError as e:',
      '    out["read"] = type(e).__name__',
      'try:',
      '    urllib.request.urlopen(urllib.request.Request(base + "/ship", data=b\'{"order":"o-1"}\', method="POST"), timeout=10)',
      '    out["write"] = "ok"',
      'except (ConnectionError, urllib.error.URLError) as e:',
      '    reason = getattr(e, "reason", e)',
      '    out["write"] = type(reason).__name__',
      'print(json.dumps(out))',
    ].join('\n')
    const childEnv = { ...process.env, SSL_CERT_FILE: env.caPath, HTTPS_PROXY: env.proxy.url, https_proxy: env.proxy.url, NO_PROXY: '', no_proxy: '' }
    const result = await run('python3', ['-c', script, env.base], { env: childEnv })
    // Over TLS, Python's http.client reports a TCP reset as RemoteDisconnected (ssl treats it as a
    // ragged EOF). A real HTTPS server that resets after reading the request gives the same.
    const real = await startResettingHttpsServer()
    try {
      const direct = await run('python3', ['-c', script, real.url], { env: { ...process.env, SSL_CERT_FILE: real.caPath, NO_PROXY: '*', no_proxy: '*' } })
      expect(JSON.parse(direct.stdout).write).toBe('RemoteDisconnected')
    } finally {
      await real.close()
    }
    expect(JSON.parse(result.stdout)).toEqual({ read: [429, '2'], write: 'RemoteDisconnected' })
    await expectFaultEvidence(env)
  })

  it('a plain http:// URL that undici tunnels through CONNECT still goes through the storm', async () => {
    const plain = await startUpstream()
    const ca = await createInMemoryCertificateAuthority()
    const proxy = await startProxy({ config: { seed: 1, rules: [{ name: 'busy', route: 'GET /items/*', kind: 'rate_limit', calls: [1] }] }, ca, connectPorts: [plain.port] })
    const agent = new ProxyAgent({ uri: proxy.url }) // proxyTunnel defaults to true: CONNECT even for http://
    try {
      const statuses: number[] = []
      for (let i = 0; i < 2; i++) {
        const response = await undiciRequest(`${plain.url}/items/a`, { dispatcher: agent })
        statuses.push(response.statusCode)
        await response.body.dump()
      }
      expect(statuses).toEqual([429, 200])
      expect(plain.hits('/items/a')).toBe(1)
      expect(proxy.storm.report().calls.map((c) => [c.url, c.status])).toEqual([
        [`${plain.url}/items/a`, 429],
        [`${plain.url}/items/a`, 200],
      ])
    } finally {
      await agent.close()
      await proxy.close()
      await plain.close()
    }
  })
})

describe('keep-alive inside a tunnel', () => {
  it('serves many requests over one intercepted TLS connection', async () => {
    const env = closing(await startHttpsProxied({ rules: [] }))
    let tunnels = 0
    env.proxy.server.prependListener('connect', () => tunnels++)
    const agent = new ProxyAgent({ uri: env.proxy.url, requestTls: { ca: env.ca.certificatePem }, connections: 1 } as ConstructorParameters<typeof ProxyAgent>[0])
    try {
      for (let i = 0; i < 20; i++) {
        const response = await undiciRequest(`${env.base}/items/${i}`, { dispatcher: agent })
        expect(response.statusCode).toBe(200)
        expect(((await response.body.json()) as { id: string }).id).toBe(String(i))
      }
    } finally {
      await agent.close()
    }
    expect(env.upstream.hits()).toBe(20)
    expect(tunnels).toBe(1)
  })
})
