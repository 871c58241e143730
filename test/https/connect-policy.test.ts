/**
 * Which CONNECTs the proxy accepts (443 plus configured ports, never its own ports), what it
 * intercepts, and what it tunnels untouched.
 */
import net from 'node:net'
import tls from 'node:tls'
import { ProxyAgent, request } from 'undici'
import { describe, expect, it } from 'vitest'
import { parseConfig } from '../../src/create-storm.js'
import { startProxy } from '../../src/proxy/proxy-server.js'
import { startHttpsProxied, upstreamTestCa } from '../helpers/https-proxied.js'
import { closing } from '../helpers/teardown.js'

/** Send a raw CONNECT and return the status line and body the proxy answers with. */
function rawConnect(proxyUrl: string, target: string): Promise<{ status: string; body: string }> {
  const { hostname, port } = new URL(proxyUrl)
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), hostname, () => socket.write(`CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n\r\n`))
    let reply = ''
    socket.on('data', (chunk) => {
      reply += chunk.toString('utf8')
      if (reply.startsWith('HTTP/1.1 200')) socket.destroy()
    })
    socket.on('close', () => {
      const [head = '', body = ''] = reply.split('\r\n\r\n')
      resolve({ status: head.split('\r\n')[0] ?? '', body })
    })
    socket.on('error', reject)
    socket.setTimeout(5000, () => socket.destroy())
  })
}

describe('CONNECT allowlist', () => {
  it('refuses a port outside the allowlist with 403 and says how to allow it', async () => {
    const proxy = closing(await startProxy({}))
    const reply = await rawConnect(proxy.url, 'example.com:22')
    expect(reply.status).toBe('HTTP/1.1 403 Forbidden')
    expect(reply.body).toBe('[toolstorm] Failed to open a tunnel to example.com:22: port 22 is not allowed (allowed: 443). Start the proxy with --connect-port 22 to allow it.\n')
  })

  it('accepts 443 and the configured ports', async () => {
    const proxy = closing(await startProxy({ connectPorts: [8443] }))
    expect((await rawConnect(proxy.url, 'example.com:443')).status).toBe('HTTP/1.1 200 Connection Established')
    expect((await rawConnect(proxy.url, 'example.com:8443')).status).toBe('HTTP/1.1 200 Connection Established')
    expect((await rawConnect(proxy.url, 'example.com:8080')).status).toBe('HTTP/1.1 403 Forbidden')
  })

  it('refuses the admin port and its own port, whatever the host name and even when configured', async () => {
    const first = closing(await startProxy({}))
    const adminPort = Number(new URL(first.adminUrl).port)
    const dataPort = Number(new URL(first.url).port)
    await first.close()
    const proxy = closing(await startProxy({ adminPort, port: dataPort, connectPorts: [adminPort, dataPort] }))
    for (const target of [`127.0.0.1:${adminPort}`, `localhost:${adminPort}`, `admin.localtest.me:${adminPort}`, `127.0.0.1:${dataPort}`]) {
      const reply = await rawConnect(proxy.url, target)
      expect(reply.status).toBe('HTTP/1.1 403 Forbidden')
      expect(reply.body).toContain("is this proxy's own (data plane or admin API), never reachable through CONNECT")
    }
  })

  it('refuses a malformed target with 400', async () => {
    const proxy = closing(await startProxy({}))
    const reply = await rawConnect(proxy.url, 'example.com')
    expect(reply.status).toBe('HTTP/1.1 400 Bad Request')
    expect(reply.body).toBe('[toolstorm] Failed to open a tunnel to "example.com": expected host:port, as in "CONNECT api.example.com:443".\n')
  })
})

describe('leaf certificates', () => {
  it('presents a leaf for the CONNECT host, plus the SNI name a client sends', async () => {
    const proxy = closing(await startProxy({}))
    const { hostname, port } = new URL(proxy.url)
    const names = async (servername: string | null) => {
      const socket = net.connect(Number(port), hostname, () => socket.write('CONNECT 127.0.0.1:443 HTTP/1.1\r\n\r\n'))
      await new Promise((resolve) => socket.once('data', resolve))
      const secure = tls.connect({ socket, host: servername ?? '127.0.0.1', ...(servername ? { servername } : {}), ca: proxy.ca!.certificatePem })
      await new Promise((resolve, reject) => secure.once('secureConnect', resolve).once('error', reject))
      const san = secure.getPeerX509Certificate()?.subjectAltName
      secure.destroy()
      return san
    }
    expect(await names(null)).toBe('IP Address:127.0.0.1')
    expect(await names('alias.test')).toBe('IP Address:127.0.0.1, DNS:alias.test')
  })
})

describe('tunnelUnmatched', () => {
  it('tunnels a host no rule names untouched, and intercepts the host a rule names', async () => {
    const routes = (port: number) => ({ ship: `POST https://localhost:${port}/ship` })
    const env = closing(await startHttpsProxied({ rules: [] }, { tunnelUnmatched: true }))
    const port = env.upstream.port
    // Rules changed live (as PUT /rules does) decide the next CONNECT.
    env.proxy.storm.setConfig(parseConfig({ routes: routes(port), rules: [{ name: 'lost', route: 'ship', kind: 'response_lost' }] }))

    // 127.0.0.1 is named by no rule: the client talks TLS with the real upstream, whose CA it trusts.
    const trustsUpstreamOnly = new ProxyAgent({ uri: env.proxy.url, requestTls: { ca: (await upstreamTestCa()).certPem } })
    try {
      const untouched = await request(`https://127.0.0.1:${port}/items/a`, { dispatcher: trustsUpstreamOnly })
      expect(untouched.statusCode).toBe(200)
      await untouched.body.dump()
      // localhost is named by the rule: intercepted, so the upstream's CA alone no longer verifies it.
      await expect(request(`https://localhost:${port}/items/a`, { dispatcher: trustsUpstreamOnly })).rejects.toMatchObject({ code: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE' })
    } finally {
      await trustsUpstreamOnly.close()
    }
    await expect(request(`https://localhost:${port}/ship`, { dispatcher: env.dispatcher, method: 'POST', body: '{"order":"o-1"}' })).rejects.toMatchObject({ code: 'ECONNRESET' })
    expect(env.upstream.commits).toEqual(['o-1'])
    const report = await env.report()
    expect(report.calls.map((c) => [c.url, c.outcome])).toEqual([[`https://localhost:${port}/ship`, 'reset']])
  })

  it('intercepts every host under a call budget, so the calls past it are refused and the report counts every call', async () => {
    // No rule names a host: without the budget every CONNECT would be tunnelled, its calls never counted.
    const env = closing(await startHttpsProxied({ rules: [], maxCalls: 2 }, { tunnelUnmatched: true }))
    const statuses: number[] = []
    for (const order of ['o-1', 'o-1', 'o-2']) {
      const response = await request(`${env.base}/ship`, { dispatcher: env.dispatcher, method: 'POST', body: JSON.stringify({ order }) })
      statuses.push(response.statusCode)
      await response.body.dump()
    }
    expect(statuses).toEqual([201, 201, 503])
    expect(env.upstream.commits).toEqual(['o-1', 'o-1'])
    const report = await env.report()
    expect([report.calls.length, report.budgetRejections, report.maxCalls]).toEqual([2, 1, 2])
    // The tool server's commits reached the run through the calls' header: the duplicate is seen.
    expect(report.effects.map((e) => [e.key, e.call])).toEqual([['o-1', 1], ['o-1', 2]])
  })

  it('answers 502 when the host of an untouched tunnel cannot be reached', async () => {
    const closed = net.createServer()
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve))
    const port = (closed.address() as net.AddressInfo).port
    await new Promise<void>((resolve) => closed.close(() => resolve()))
    const proxy = closing(await startProxy({ tunnelUnmatched: true, connectPorts: [port] }))
    const reply = await rawConnect(proxy.url, `127.0.0.1:${port}`)
    expect(reply.status).toBe('HTTP/1.1 502 Bad Gateway')
    expect(reply.body).toBe(`[toolstorm] Failed to open a tunnel to 127.0.0.1:${port}: ECONNREFUSED. Check that the host is reachable from this machine.\n`)
  })
})
