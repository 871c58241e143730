import { execFile, spawn } from 'node:child_process'
import net from 'node:net'
import type { AddressInfo } from 'node:net'
import path from 'node:path'
import { promisify } from 'node:util'
import { ProxyAgent, fetch as undiciFetch } from 'undici'
import { describe, expect, it } from 'vitest'
import { ToolstormEffects } from '../../src/effects/toolstorm-effects.js'
import { startProxy } from '../../src/proxy/proxy-server.js'
import { ROOT } from '../helpers/cli.js'
import { closing, closingChild } from '../helpers/teardown.js'

const run = promisify(execFile)

async function closedPort(): Promise<number> {
  const server = net.createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}

describe('effects helpers', () => {
  it('lets a Python tool server prove a duplicate commit behind the proxy', async () => {
    // Forward mode: the proxy needs no target, so the tool server can learn the sidecar URL first.
    const proxy = closing(await startProxy({ config: { rules: [{ name: 'lost-ack', route: 'POST /ship', kind: 'response_lost', calls: [1] }] } }))
    const child = closingChild(spawn('python3', [path.join(ROOT, 'fixtures/python-tool-server/server.py'), proxy.adminUrl], { stdio: ['ignore', 'pipe', 'inherit'] }))
    const port = await new Promise<string>((resolve) => child.stdout.once('data', (chunk: Buffer) => resolve(chunk.toString().trim())))
    const dispatcher = new ProxyAgent({ uri: proxy.url, proxyTunnel: false })
    const ship = () => undiciFetch(`http://127.0.0.1:${port}/ship`, { method: 'POST', body: '{"order":"o-1"}', dispatcher })
    await expect(ship()).rejects.toThrow('fetch failed')
    expect((await ship()).status).toBe(201)
    await dispatcher.close()
    const report = proxy.storm.report()
    expect(report.effects.map((e) => [e.key, e.call, e.identity])).toEqual([
      ['o-1', 1, 1],
      ['o-1', 2, 1],
    ])
    const state = (await (await fetch(`http://127.0.0.1:${port}/`)).json()) as { stats: Record<string, number> }
    expect(state.stats).toEqual({ sent: 2, dropped: 0, skipped: 0, pending: 0 })
  })

  it('Python helper: skips production traffic, warns once, never raises and stays within its timeout', async () => {
    const port = await closedPort()
    const script = [
      'import json, sys, time, warnings',
      `sys.path.insert(0, ${JSON.stringify(path.join(ROOT, 'helpers/python'))})`,
      'from toolstorm_effects import ToolstormEffects',
      `fx = ToolstormEffects(sidecar_url="http://127.0.0.1:${port}", timeout=0.3)`,
      'with warnings.catch_warnings(record=True) as caught:',
      '    warnings.simplefilter("always")',
      '    skipped = fx.report({"content-type": "x"}, "shipment", "o-1")',
      '    t = time.monotonic()',
      '    a = fx.report({"X-Toolstorm-Call": "abc"}, "shipment", "o-1")',
      '    b = fx.report({"HTTP_X_TOOLSTORM_CALL": "abc"}, "shipment", "o-2")',
      '    elapsed = time.monotonic() - t',
      'print(json.dumps({"results": [skipped, a, b], "warnings": len(caught), "stats": fx.stats(), "fast": elapsed < 1.5, "flushed": fx.flush(0.1)}))',
    ].join('\n')
    const result = await run('python3', ['-c', script])
    expect(JSON.parse(result.stdout)).toEqual({ results: [false, false, false], warnings: 1, stats: { sent: 0, dropped: 2, skipped: 1, pending: 0 }, fast: true, flushed: true })
  })

  it('TypeScript helper: skips production traffic, warns once, never rejects and stays within its timeout', async () => {
    const warnings: string[] = []
    const effects = new ToolstormEffects({ sidecarUrl: `http://127.0.0.1:${await closedPort()}`, timeoutMs: 300, warn: (m) => warnings.push(m) })
    expect(await effects.report({ headers: {} }, 'shipment', 'o-1')).toBe(false)
    const started = performance.now()
    const results = await Promise.all([effects.report({ 'x-toolstorm-call': 'abc' }, 'shipment', 'o-1'), effects.report(new Headers({ 'x-toolstorm-call': 'abc' }), 'shipment', 'o-2')])
    expect(performance.now() - started).toBeLessThan(1500)
    expect(results).toEqual([false, false])
    expect(warnings).toHaveLength(1)
    expect(warnings[0]).toContain('could not report an effect')
    await effects.flush()
    expect(effects.stats()).toEqual({ sent: 0, dropped: 2, skipped: 1, pending: 0 })
  })

  it('TypeScript helper: gives up on a sidecar that never answers', async () => {
    const silent = net.createServer(() => undefined)
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
    try {
      const effects = new ToolstormEffects({ sidecarUrl: `http://127.0.0.1:${(silent.address() as AddressInfo).port}`, timeoutMs: 200, warn: () => undefined })
      const started = performance.now()
      expect(await effects.report('abc', 'shipment', 'o-1')).toBe(false)
      expect(performance.now() - started).toBeLessThan(1000)
    } finally {
      silent.close()
    }
  })

  it('accepts the documented curl equivalent', async () => {
    const proxy = closing(await startProxy({}))
    const exchange = proxy.storm.begin({ method: 'POST', url: new URL('http://t.test/ship'), headers: {} })
    const { stdout } = await run('curl', ['-s', '-o', '/dev/null', '-w', '%{http_code}', '-X', 'POST', `${proxy.adminUrl}/effects`, '-H', 'content-type: application/json', '-d', JSON.stringify({ name: 'shipment', key: 'o-1', call: exchange.id })])
    expect(stdout).toBe('201')
    expect(proxy.storm.report().effects).toHaveLength(1)
  })
})
