import http from 'node:http'
import { describe, expect, it } from 'vitest'
import type { StreamBatch, StreamSnapshot } from '../../src/proxy/admin/events.js'
import { openEvents } from '../helpers/event-stream.js'
import { startProxied } from '../helpers/proxied.js'
import { closing } from '../helpers/teardown.js'

function raw(url: string, headers: Record<string, string> = {}): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { headers }, (res) => {
      let body = ''
      res.on('data', (c: Buffer) => (body += c))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }))
    })
    req.on('error', reject)
    req.end()
  })
}

describe('dashboard routes on the admin server', () => {
  it('serves the page without the token, with a strict policy, and nothing outside it', async () => {
    const env = closing(await startProxied('reverse'))
    const admin = env.proxy.adminUrl
    expect(env.proxy.dashboardUrl).toBe(`${admin}/dashboard/`)
    const redirect = await raw(`${admin}/dashboard`)
    expect(redirect.status).toBe(308)
    expect(redirect.headers.location).toBe('/dashboard/')
    const page = await raw(`${admin}/dashboard/`)
    expect(page.status).toBe(200)
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8')
    expect(page.headers['content-security-policy']).toContain("default-src 'none'")
    expect(page.headers['x-frame-options']).toBe('DENY')
    expect(page.body).not.toContain(env.proxy.token)
    const asset = /src="\.\/(assets\/[^"]+\.js)"/.exec(page.body)?.[1]
    expect((await raw(`${admin}/dashboard/${asset}`)).headers['cache-control']).toBe('public, max-age=31536000, immutable')
    for (const escape of ['/dashboard/../package.json', '/dashboard/%2e%2e/%2e%2e/package.json', '/dashboard/..%2f..%2fpackage.json', '/dashboard/.hidden', '/dashboard/nope.js']) {
      const answer = await raw(`${admin}${escape}`)
      expect([401, 404], escape).toContain(answer.status)
      expect(answer.body).not.toContain('"name": "toolstorm"')
    }
    // The DNS-rebinding check comes first, for the page too.
    expect((await raw(`${admin}/dashboard/`, { host: 'attacker.example' })).status).toBe(403)
    expect((await fetch(`${admin}/events`)).status).toBe(401)
  })

  it('streams a snapshot, then batches of calls, effects and coverage, and a fresh snapshot after a reset', async () => {
    const env = closing(await startProxied('reverse'))
    const current = env
    const first = openEvents(current, 'default', (events) => events.some((e) => e.event === 'batch' && (e.data as StreamBatch).calls.some((c) => c.status === 429)))
    await first.opened
    const secret = 'sk-proj-0123456789abcdefghijKLMNOP'
    expect((await fetch(`${current.base}/items/a?api_key=${secret}`, { headers: { 'x-toolstorm-key': secret } })).status).toBe(429)
    const events = await first.events
    // Only what the report holds reaches a dashboard: redacted.
    expect(JSON.stringify(events)).not.toContain(secret)
    expect(events[0]?.event).toBe('snapshot')
    const snapshot = events[0]?.data as StreamSnapshot
    expect(snapshot).toMatchObject({ run: 'default', exists: false, report: { kind: 'toolstorm.report', run: 'default', calls: [] }, redaction: { keys: 0, secrets: 0 } })
    const batch = events.find((e) => e.event === 'batch')?.data as StreamBatch
    expect(batch.calls[0]).toMatchObject({ id: 1, route: 'GET /items/a', fault: 'items-busy', injected: true, status: 429, url: expect.stringContaining('api_key=') })
    expect(batch.coverage['items-busy']).toEqual({ eligible: 1, selected: 1, triggered: 1 })
    expect(JSON.stringify(events)).not.toContain(current.proxy.storm.nonce)

    // Effects arrive with their call.
    const effectsOf = (events: Array<{ event: string; data: unknown }>) => events.filter((e) => e.event === 'batch').flatMap((e) => (e.data as StreamBatch).effects)
    const second = openEvents(current, 'default', (events) => effectsOf(events).length > 0)
    await second.opened
    await fetch(`${current.base}/ship`, { method: 'POST', body: JSON.stringify({ order: 'o-9' }) }).catch(() => undefined)
    const later = await second.events
    expect((later[0]?.data as StreamSnapshot).report.calls).toHaveLength(1)
    expect(effectsOf(later)).toEqual([expect.objectContaining({ name: 'shipment', key: 'o-9', call: 2 })])

    // A reset sends a fresh, empty snapshot.
    const third = openEvents(current, 'default', (events) => events.filter((e) => e.event === 'snapshot').length >= 2)
    await third.opened
    await current.admin('/reset?run=default', { method: 'POST' })
    const reset = await third.events
    expect((reset[0]?.data as StreamSnapshot).report.calls).toHaveLength(2)
    expect(reset.at(-1)?.data).toMatchObject({ exists: false, report: { calls: [], effects: [] } })
  })

  it('ends open event streams when the proxy closes, without waiting for the grace period', async () => {
    const env = closing(await startProxied('reverse'))
    const response = await env.admin('/events')
    const reader = response.body!.getReader()
    await reader.read()
    const started = Date.now()
    await env.close()
    expect(Date.now() - started).toBeLessThan(1_500)
  })

  it('saves the editor’s rules keeping the redaction and MCP settings and the real values behind redacted ones', async () => {
    const secret = 'sk-live-0123456789abcdefghij'
    const env = closing(await startProxied('reverse', {
      seed: 1,
      redact: { keys: ['x-shop-key'], secrets: [secret] },
      mcp: { endpoints: ['/rpc'], detect: false },
      rules: [{ name: 'fake', route: 'GET /items/*', kind: 'replace', replacement: { token: secret, ok: true } }],
    }))
    const shown = (await env.report()).rules[0]!.replacement as Record<string, unknown>
    expect(JSON.stringify(shown)).not.toContain(secret)
    const edited = { seed: 2, rules: [{ name: 'fake', route: 'GET /items/*', kind: 'replace', replacement: shown, probability: 0.5 }] }
    const saved = await env.admin('/dashboard/rules', { method: 'PUT', body: JSON.stringify(edited) })
    expect(saved.status).toBe(200)
    const config = env.proxy.storm.config
    expect(config.seed).toBe(2)
    expect(config.redact).toEqual({ keys: ['x-shop-key'], secrets: [secret] })
    expect(config.mcp).toEqual({ endpoints: ['/rpc'], detect: false })
    expect(config.rules[0]).toMatchObject({ probability: 0.5, replacement: { token: secret, ok: true } })

    const refused = await env.admin('/dashboard/rules', { method: 'PUT', headers: { 'content-type': 'application/yaml' }, body: 'rules:\n  - name: x\n    route: GET /a\n    kind: nope\n' })
    expect(refused.status).toBe(400)
    expect(await refused.json()).toMatchObject({ error: { code: 'ERR_CONFIG_INVALID', details: [expect.stringMatching(/^\$\.rules\[0\]\.kind: expected "kind" to be one of/)] } })
    const syntax = await env.admin('/dashboard/rules', { method: 'PUT', body: '{"rules": [' })
    expect(await syntax.json()).toMatchObject({ error: { code: 'ERR_JSON_INVALID', message: expect.stringMatching(/^Failed to read the rules editor’s text: the text is not valid JSON \(line 1, column \d+/) } })
    expect(env.proxy.storm.config.seed).toBe(2)
  })

  it('can be turned off', async () => {
    const env = closing(await startProxied('reverse', undefined, { dashboard: false }))
    expect(env.proxy.dashboardUrl).toBeNull()
    expect((await env.admin('/dashboard/')).status).toBe(404)
    expect((await env.admin('/events')).status).toBe(404)
  })
})
