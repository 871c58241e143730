/**
 * A client that does not trust the toolstorm CA fails its own handshake; the proxy says nothing
 * alarming, does not crash, and keeps serving everyone else.
 */
import { execFile } from 'node:child_process'
import net from 'node:net'
import tls from 'node:tls'
import { promisify } from 'node:util'
import { ProxyAgent, request } from 'undici'
import { describe, expect, it } from 'vitest'
import { startHttpsProxied, type HttpsProxied } from '../helpers/https-proxied.js'
import { closing } from '../helpers/teardown.js'

const run = promisify(execFile)
async function expectStillServing(proxied: HttpsProxied): Promise<void> {
  const response = await request(`${proxied.base}/items/ok`, { dispatcher: proxied.dispatcher })
  expect(response.statusCode).toBe(200)
  await response.body.dump()
}

describe('a client that does not trust the CA', () => {
  it('fails its handshake (undici), and the proxy keeps serving', async () => {
    const env = closing(await startHttpsProxied({ rules: [] }))
    const untrusting = new ProxyAgent({ uri: env.proxy.url })
    try {
      await expect(request(`${env.base}/items/a`, { dispatcher: untrusting })).rejects.toMatchObject({ code: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE' })
    } finally {
      await untrusting.close()
    }
    await expectStillServing(env)
    expect(env.upstream.hits('/items/a')).toBe(0)
    expect((await env.report()).calls.map((c) => c.url)).toEqual([`${env.base}/items/ok`])
    const started = Date.now()
    await env.proxy.close()
    expect(Date.now() - started).toBeLessThan(1000)
  })

  it('fails its handshake (curl without --cacert), and the proxy reports the refusal once, quietly', async () => {
    const refusals: Array<[string, string]> = []
    const env = closing(await startHttpsProxied({ rules: [] }, { onCertificateRefused: (host, reason) => refusals.push([host, reason]) }))
    const result = await run('curl', ['-sS', '-x', env.proxy.url, `${env.base}/items/a`], { env: { ...process.env, NO_PROXY: '', no_proxy: '', CURL_CA_BUNDLE: '' } }).then(
      () => ({ code: 0, stderr: '' }),
      (e: { code: number; stderr: string }) => e,
    )
    expect(result.code).toBe(60) // CURLE_PEER_FAILED_VERIFICATION
    expect(result.stderr).toContain('SSL certificate problem')
    expect(refusals).toEqual([['127.0.0.1', 'unknown CA']])
    await expectStillServing(env)
  })

  it("fails its handshake (Python's urllib without the CA), and the proxy reports the refusal", async () => {
    const refusals: Array<[string, string]> = []
    const env = closing(await startHttpsProxied({ rules: [] }, { onCertificateRefused: (host, reason) => refusals.push([host, reason]) }))
    const script = 'import sys, urllib.request\ntry:\n    urllib.request.urlopen(sys.argv[1], timeout=10)\nexcept Exception as e:\n    print(type(getattr(e, "reason", e)).__name__)'
    const result = await run('python3', ['-c', script, `${env.base}/items/a`], { env: { ...process.env, HTTPS_PROXY: env.proxy.url, https_proxy: env.proxy.url, NO_PROXY: '', no_proxy: '' } })
    expect(result.stdout.trim()).toBe('SSLCertVerificationError')
    expect(refusals).toEqual([['127.0.0.1', 'unknown CA']])
    await expectStillServing(env)
  })

  it('survives a tunnel that sends a broken handshake or nothing at all', async () => {
    const env = closing(await startHttpsProxied({ rules: [] }))
    const { hostname, port } = new URL(env.proxy.url)
    const open = (bytes: Buffer | null) =>
      new Promise<void>((resolve) => {
        const socket = net.connect(Number(port), hostname, () => socket.write(`CONNECT 127.0.0.1:${env.upstream.port} HTTP/1.1\r\n\r\n`))
        socket.once('data', () => {
          if (bytes) socket.write(bytes)
          setTimeout(() => socket.destroy(), 50)
        })
        socket.on('close', () => resolve())
        socket.on('error', () => resolve())
      })
    await open(Buffer.from([0x16, 0x03, 0x01, 0x00, 0x05, 0xde, 0xad, 0xbe, 0xef, 0x00]))
    await open(null)
    // A TLS client that gives up halfway through its handshake.
    await new Promise<void>((resolve) => {
      const socket = net.connect(Number(port), hostname, () => socket.write(`CONNECT 127.0.0.1:${env.upstream.port} HTTP/1.1\r\n\r\n`))
      socket.once('data', () => {
        const secure = tls.connect({ socket, rejectUnauthorized: false })
        secure.once('secureConnect', () => secure.destroy())
        secure.on('error', () => undefined)
        secure.on('close', () => resolve())
      })
    })
    await expectStillServing(env)
    // Tunnels whose clients left are closed, so shutting down does not wait for them.
    const started = Date.now()
    await env.proxy.close()
    expect(Date.now() - started).toBeLessThan(1000)
  })
})
