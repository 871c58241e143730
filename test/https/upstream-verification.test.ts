/**
 * The proxy verifies the real upstream's certificate by default; upstreamCa trusts an extra CA;
 * only the loudly named option turns verification off.
 */
import { ProxyAgent, request } from 'undici'
import { describe, expect, it } from 'vitest'
import { startProxy } from '../../src/proxy/proxy-server.js'
import { createInMemoryCertificateAuthority } from '../../src/proxy/tls/certificate-authority.js'
import { startHttpsProxied, upstreamTestCa, type HttpsProxied } from '../helpers/https-proxied.js'
import { startUpstream } from '../helpers/upstream.js'
import { closing } from '../helpers/teardown.js'

async function get(proxied: HttpsProxied, path: string): Promise<{ status: number; body: string }> {
  const response = await request(`${proxied.base}${path}`, { dispatcher: proxied.dispatcher })
  return { status: response.statusCode, body: await response.body.text() }
}

describe('upstream TLS verification', () => {
  it('answers 502 when the upstream certificate is not trusted, and never sends the request', async () => {
    const env = closing(await startHttpsProxied({ rules: [] }, { trustUpstream: false }))
    const reply = await get(env, '/items/a')
    expect(reply.status).toBe(502)
    expect(JSON.parse(reply.body)).toEqual({
      error: { type: 'upstream_unreachable', code: 'ERR_UPSTREAM_UNREACHABLE', message: `[toolstorm] Failed to reach the upstream for "GET ${env.base}/items/a": UNABLE_TO_VERIFY_LEAF_SIGNATURE.` },
    })
    expect(env.upstream.hits()).toBe(0)
    expect((await env.report()).calls.map((c) => [c.status, c.executed, c.error])).toEqual([[502, false, 'UPSTREAM_UNREACHABLE']])
  })

  it('trusts the upstream with upstreamCa', async () => {
    const env = closing(await startHttpsProxied({ rules: [] }, { trustUpstream: true }))
    expect((await get(env, '/items/a')).status).toBe(200)
    expect(env.upstream.hits('/items/a')).toBe(1)
  })

  it('refuses a certificate from a trusted CA that names another host', async () => {
    const upstreamCa = await upstreamTestCa()
    const upstream = await startUpstream({ tls: await upstreamCa.issue(['other.test']) })
    const proxy = await startProxy({ ca: await createInMemoryCertificateAuthority(), connectPorts: [upstream.port], upstreamCa: [upstreamCa.certPem] })
    const agent = new ProxyAgent({ uri: proxy.url, requestTls: { ca: proxy.ca!.certificatePem } })
    try {
      const response = await request(`${upstream.url}/items/a`, { dispatcher: agent })
      expect(response.statusCode).toBe(502)
      expect(((await response.body.json()) as { error: { message: string } }).error.message).toBe(`[toolstorm] Failed to reach the upstream for "GET ${upstream.url}/items/a": ERR_TLS_CERT_ALTNAME_INVALID.`)
      expect(upstream.hits()).toBe(0)
    } finally {
      await agent.close()
      await proxy.close()
      await upstream.close()
    }
  })

  it('skips verification only with insecureSkipUpstreamTlsVerification', async () => {
    const env = closing(await startHttpsProxied({ rules: [] }, { trustUpstream: false, insecureSkipUpstreamTlsVerification: true }))
    expect((await get(env, '/items/a')).status).toBe(200)
  })

  it('refuses upstreamCa together with insecureSkipUpstreamTlsVerification', async () => {
    await expect(startProxy({ upstreamCa: ['x'], insecureSkipUpstreamTlsVerification: true })).rejects.toThrow(
      'Failed to start the proxy: --upstream-ca and --insecure-skip-upstream-tls-verification contradict each other. Keep one of them.',
    )
  })
})
