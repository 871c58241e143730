import { execFile } from 'node:child_process'
import http from 'node:http'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import OpenAI from 'openai'
import { request as undiciRequest, fetch as undiciFetch } from 'undici'
import { describe, expect, it } from 'vitest'
import { runCli } from '../helpers/cli.js'
import { startProxied, type Proxied } from '../helpers/proxied.js'
import { closing } from '../helpers/teardown.js'
import { PROXY_TRANSPORTS } from '../helpers/transports.js'

const run = promisify(execFile)

/** What every client must observe: a 429 with its hint on the read, a lost acknowledgement on the write. */
async function expectFaultEvidence(proxied: Proxied): Promise<void> {
  expect(proxied.upstream.hits('/items/a')).toBe(0)
  expect(proxied.upstream.commits).toEqual(['o-1'])
  const report = await proxied.report()
  expect(report.coverage).toEqual({ 'items-busy': { eligible: 1, selected: 1, triggered: 1 }, 'lost-ack': { eligible: 1, selected: 1, triggered: 1 } })
  expect(report.calls.map((c) => [c.route, c.status, c.outcome, c.executed])).toEqual([
    ['GET /items/a', 429, 'response', false],
    ['POST /ship', null, 'reset', true],
  ])
  expect(report.effects.map((e) => [e.name, e.key, e.call])).toEqual([['shipment', 'o-1', 2]])
}

for (const mode of PROXY_TRANSPORTS) {
  describe(`real clients through the proxy (${mode} mode)`, () => {
    it('global fetch sees the 429 and the reset', async () => {
      const env = closing(await startProxied(mode))
      const init = env.dispatcher ? ({ dispatcher: env.dispatcher } as unknown as RequestInit) : {}
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

    it('undici.request and undici.fetch see the 429 and the reset', async () => {
      const env = closing(await startProxied(mode))
      const options = env.dispatcher ? { dispatcher: env.dispatcher } : {}
      const read = await undiciRequest(`${env.base}/items/a`, options)
      expect(read.statusCode).toBe(429)
      expect(read.headers['retry-after-ms']).toBe('2000')
      await read.body.dump()
      await expect(undiciFetch(`${env.base}/ship`, { ...options, method: 'POST', body: '{"order":"o-1"}' })).rejects.toMatchObject({ cause: { code: 'ECONNRESET' } })
      await expectFaultEvidence(env)
    })

    it('node:http sees the 429 and the reset', async () => {
      const env = closing(await startProxied(mode))
      const proxyUrl = new URL(env.proxy.url)
      const send = (method: string, pathname: string, body?: string) =>
        new Promise<{ status?: number; error?: string }>((resolve) => {
          const target = new URL(pathname, env.base)
          const options = mode === 'forward' ? { host: proxyUrl.hostname, port: proxyUrl.port, path: target.href, method, headers: { host: target.host } } : { host: target.hostname, port: target.port, path: target.pathname, method }
          const req = http.request(options, (res) => {
            res.resume()
            res.on('end', () => resolve({ status: res.statusCode }))
          })
          req.on('error', (error: NodeJS.ErrnoException) => resolve({ error: error.code }))
          req.end(body)
        })
      expect(await send('GET', '/items/a')).toEqual({ status: 429 })
      expect(await send('POST', '/ship', '{"order":"o-1"}')).toEqual({ error: 'ECONNRESET' })
      await expectFaultEvidence(env)
    })

    it('curl sees the 429 and a connection reset', async () => {
      const env = closing(await startProxied(mode))
      const proxyArgs = mode === 'forward' ? ['-x', env.proxy.url] : []
      const read = await run('curl', ['-s', '-o', '/dev/null', '-w', '%{http_code}', ...proxyArgs, `${env.base}/items/a`])
      expect(read.stdout).toBe('429')
      const write = await run('curl', ['-s', ...proxyArgs, '-X', 'POST', '-d', '{"order":"o-1"}', `${env.base}/ship`]).then(
        () => 0,
        (e: { code: number }) => e.code,
      )
      expect(write).toBe(56) // CURLE_RECV_ERROR: "Connection reset by peer"
      await expectFaultEvidence(env)
    })

    it("Python's urllib sees the 429 and the reset", async () => {
      const env = closing(await startProxied(mode))
      const script = [
        'import json, sys, urllib.request, urllib.error',
        'base = sys.argv[1]',
        'out = {}',
        'try:',
        '    urllib.request.urlopen(base + "/items/a", timeout=10)',
        'except urllib.error.HTTPError as e:',
        '    out["read"] = [e.code, e.headers.get("Retry-After")]',
        'try:',
        '    urllib.request.urlopen(urllib.request.Request(base + "/ship", data=b\'{"order":"o-1"}\', method="POST"), timeout=10)',
        '    out["write"] = "ok"',
        'except (ConnectionResetError, urllib.error.URLError) as e:',
        '    reason = getattr(e, "reason", e)',
        '    out["write"] = type(reason).__name__',
        'print(json.dumps(out))',
      ].join('\n')
      const proxyEnv = mode === 'forward' ? { HTTP_PROXY: env.proxy.url, http_proxy: env.proxy.url } : { HTTP_PROXY: '', http_proxy: '' }
      const result = await run('python3', ['-c', script, env.base], { env: { ...process.env, NO_PROXY: '', no_proxy: '', ...proxyEnv } })
      expect(JSON.parse(result.stdout)).toEqual({ read: [429, '2'], write: 'ConnectionResetError' })
      await expectFaultEvidence(env)
    })

    it('the openai SDK retries a lost acknowledgement on its own, so the write commits twice and check exits 1', async () => {
      const env = closing(await startProxied(mode, { seed: 42, rules: [{ name: 'lost-ack', route: 'POST /v1/chat/completions', kind: 'response_lost', calls: [1] }] }))
      const client = new OpenAI({
        apiKey: 'sk-test-not-a-real-key',
        baseURL: `${env.base}/v1`,
        maxRetries: 2,
        ...(env.dispatcher ? { fetchOptions: { dispatcher: env.dispatcher } as never } : {}),
      })
      const completion = await client.chat.completions.create({ model: 'gpt-test', messages: [{ role: 'user', content: 'ship order o-1' }], user: 'o-1' })
      expect(completion.choices[0]?.message.content).toBe('ok')
      expect(env.upstream.commits).toEqual(['o-1', 'o-1'])
      const report = await env.report()
      expect(report.calls.map((c) => c.outcome)).toEqual(['reset', 'response'])
      const dir = await mkdtemp(path.join(os.tmpdir(), 'toolstorm-openai-'))
      try {
        const file = path.join(dir, 'report.json')
        await writeFile(file, JSON.stringify(report))
        const check = await runCli(['check', file])
        expect(check.code).toBe(1)
        expect(check.stdout).toContain('✗ No duplicate side effects: 1 duplicate effect(s) across 2 commits')
      } finally {
        await rm(dir, { recursive: true, force: true })
      }
    })
  })
}
