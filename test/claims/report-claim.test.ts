/**
 * Claims from an agent without tracing: `reportClaim()` (toolstorm/effects) and `POST /claims`,
 * joined to the run's calls by tool and order, or by the `traceparent` it names.
 */
import net from 'node:net'
import type { AddressInfo } from 'node:net'
import { fetch as undiciFetch } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import { ToolstormEffects } from '../../src/effects/toolstorm-effects.js'
import { startProxied, type Proxied } from '../helpers/proxied.js'

let env: Proxied | null = null
afterEach(async () => {
  await env?.close()
  env = null
})

const LOST_ACK = { seed: 1, rules: [{ name: 'lost-ack', route: 'POST /ship', kind: 'response_lost' as const, calls: [1] }] }

async function ship(base: string, order: string, headers: Record<string, string> = {}): Promise<boolean> {
  try {
    const response = await undiciFetch(`${base}/ship`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ order }) })
    await response.text()
    return response.ok
  } catch {
    return false
  }
}

describe('reportClaim()', () => {
  it('holds an untraced agent’s account against the commits: the lost answer’s commit is silent, the retry confirmed', async () => {
    env = await startProxied('reverse', LOST_ACK)
    const agent = new ToolstormEffects({ sidecarUrl: env.proxy.adminUrl, token: env.proxy.token })
    // The agent's loop: ship, report what it concluded, retry once on failure.
    for (let attempt = 1; attempt <= 2; attempt++) {
      const ok = await ship(env.base, 'o-1')
      expect(await agent.claim({ tool: 'POST /ship', status: ok ? 'success' : 'failure', toolCallId: `call_${attempt}` })).toBe(true)
      if (ok) break
    }
    const report = await env.report()
    expect(report.claims?.map((c) => [c.toolCallId, c.status, c.verdict, c.join, c.source, c.calls, c.effects.map((e) => e.call)])).toEqual([
      ['call_1', 'failure', 'silent_commit', 'order', 'api', [1], [1]],
      ['call_2', 'success', 'confirmed', 'order', 'api', [2], [2]],
    ])
    expect(agent.stats()).toEqual({ sent: 2, dropped: 0, skipped: 0, pending: 0 })
  })

  it('joins a claim naming its traceparent to exactly the calls sent under it', async () => {
    env = await startProxied('reverse', LOST_ACK)
    const agent = new ToolstormEffects({ sidecarUrl: env.proxy.adminUrl, token: env.proxy.token })
    const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'
    expect(await ship(env.base, 'o-1', { traceparent })).toBe(false)
    expect(await ship(env.base, 'o-2')).toBe(true)
    // Named by its span, the claim speaks for call 1 only, though it comes after call 2.
    await agent.claim({ tool: 'create_shipment', status: 'failure', traceparent })
    const [claim] = (await env.report()).claims ?? []
    expect([claim?.verdict, claim?.join, claim?.calls, claim?.traceId]).toEqual(['silent_commit', 'trace', [1], '0af7651916cd43dd8448eb211c80319c'])
  })

  it('is fail-open: skips without a sidecar, warns once and never rejects when it is unreachable or refuses', async () => {
    const closed = net.createServer()
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve))
    const port = (closed.address() as AddressInfo).port
    await new Promise<void>((resolve) => closed.close(() => resolve()))
    const previous = process.env.TOOLSTORM_SIDECAR
    delete process.env.TOOLSTORM_SIDECAR
    try {
      expect(await new ToolstormEffects().claim({ tool: 't', status: 'success' })).toBe(false)
    } finally {
      if (previous !== undefined) process.env.TOOLSTORM_SIDECAR = previous
    }
    const warnings: string[] = []
    const unreachable = new ToolstormEffects({ sidecarUrl: `http://127.0.0.1:${port}`, timeoutMs: 300, warn: (m) => warnings.push(m) })
    expect(await Promise.all([unreachable.claim({ tool: 't', status: 'success' }), unreachable.claim({ tool: 't', status: 'failure' })])).toEqual([false, false])
    expect(warnings).toEqual([expect.stringContaining('could not report a claim')])
    env = await startProxied('reverse', LOST_ACK)
    const noToken = new ToolstormEffects({ sidecarUrl: env.proxy.adminUrl, token: '', warn: (m) => warnings.push(m) })
    expect(await noToken.claim({ tool: 't', status: 'success' })).toBe(false)
    expect(warnings[1]).toContain('HTTP 401')
    expect(noToken.stats()).toEqual({ sent: 0, dropped: 1, skipped: 0, pending: 0 })
    expect((await env.report()).claims).toBeUndefined()
  })
})

describe('POST /claims', () => {
  it('answers 400 naming the field of a malformed claim, and stores nothing', async () => {
    env = await startProxied('reverse', LOST_ACK)
    const post = (body: unknown) => env!.admin('/claims', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
    for (const [body, field] of [
      [{ tool: 'create_shipment', status: 'done' }, 'status'],
      [{ status: 'success' }, 'tool'],
      [{ tool: 'x', status: 'success', traceparent: 'nope' }, 'traceparent'],
      [{ tool: 'x', status: 'success', run: 'a b' }, 'run'],
      [{ tool: 'x', status: 'success', extra: 1 }, 'extra'],
    ] as const) {
      const response = await post(body)
      expect(response.status).toBe(400)
      const error = ((await response.json()) as { error: { code: string; message: string } }).error
      expect(error.code).toBe('ERR_CLAIM_INVALID')
      expect(error.message).toContain(field)
    }
    expect((await env.report()).claims).toBeUndefined()
    const created = await post({ tool: 'create_shipment', status: 'success', run: 'agent-7' })
    expect(created.status).toBe(201)
    expect(await created.json()).toEqual({ ok: true, run: 'agent-7', claim: { id: 1, tool: 'create_shipment', status: 'success' } })
    expect((await env.report('agent-7')).claims?.[0]?.verdict).toBe('unverified')
  })
})
