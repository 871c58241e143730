import { describe, expect, it } from 'vitest'
import { closing } from '../helpers/teardown.js'
import { startScenario } from '../helpers/scenario.js'
import { BASE_URL_TRANSPORTS } from '../helpers/transports.js'

for (const transport of BASE_URL_TRANSPORTS) {
  describe(`faults before the upstream (${transport})`, () => {
    it('answers a timeout with 504 and never reaches the upstream', async () => {
      const scenario = closing(await startScenario(transport, { rules: [{ name: 't', route: 'POST /ship', kind: 'timeout' }] }))
      const response = await fetch(`${scenario.baseUrl}/ship`, { method: 'POST', body: JSON.stringify({ order: 'o-1' }) })
      expect(response.status).toBe(504)
      expect(await response.json()).toEqual({ error: { type: 'timeout', message: 'Upstream request timed out.' } })
      expect(scenario.upstream.hits()).toBe(0)
      expect(scenario.upstream.commits).toEqual([])
      const report = await scenario.report()
      expect(report.calls[0]).toMatchObject({ route: 'POST /ship', kind: 'timeout', phase: 'before-upstream', executed: false, injected: true, outcome: 'response', status: 504 })
      expect(report.effects).toEqual([])
    })

    it('holds a timeout for its delay before answering', async () => {
      const scenario = closing(await startScenario(transport, { rules: [{ name: 't', route: 'GET /items/*', kind: 'timeout', delay: 0.3 }] }))
      const started = performance.now()
      const response = await fetch(`${scenario.baseUrl}/items/a`)
      expect(response.status).toBe(504)
      expect(performance.now() - started).toBeGreaterThanOrEqual(290)
    })

    it('answers a rate limit with 429, Retry-After and retry-after-ms', async () => {
      const scenario = closing(await startScenario(transport, { rules: [{ name: 'busy', route: 'GET /items/*', kind: 'rate_limit', calls: [1], delay: 0.6 }] }))
      const first = await fetch(`${scenario.baseUrl}/items/a`)
      expect(first.status).toBe(429)
      expect(first.headers.get('retry-after')).toBe('1')
      expect(first.headers.get('retry-after-ms')).toBe('600')
      expect(scenario.upstream.hits()).toBe(0)
      const second = await fetch(`${scenario.baseUrl}/items/a`)
      expect(second.status).toBe(200)
      expect(scenario.upstream.hits()).toBe(1)
      const report = await scenario.report()
      expect(report.calls.map((call) => [call.ordinal, call.status, call.retryAfter])).toEqual([
        [1, 429, 0.6],
        [2, 200, null],
      ])
    })

    it('answers unavailable with 503 and never reaches the upstream', async () => {
      const scenario = closing(await startScenario(transport, { rules: [{ name: 'down', route: 'GET /items/*', kind: 'unavailable' }] }))
      const response = await fetch(`${scenario.baseUrl}/items/a`)
      expect(response.status).toBe(503)
      expect(scenario.upstream.hits()).toBe(0)
    })

    it('serves a replacement with its status and headers, pristine on every call', async () => {
      const scenario = closing(
        await startScenario(transport, {
          rules: [{ name: 'fake', route: 'GET /items/*', kind: 'replace', status: 202, headers: { 'X-Fake': 'yes' }, replacement: { paid: false, items: [] } }],
        }),
      )
      for (let i = 0; i < 2; i++) {
        const response = await fetch(`${scenario.baseUrl}/items/a`)
        expect(response.status).toBe(202)
        expect(response.headers.get('x-fake')).toBe('yes')
        const body = (await response.json()) as { items: unknown[] }
        expect(body).toEqual({ paid: false, items: [] })
        body.items.push('mutated by the caller')
      }
      expect(scenario.upstream.hits()).toBe(0)
      const report = await scenario.report()
      expect(report.calls.every((call) => !call.executed && call.injected)).toBe(true)
    })

    it('delays the request by the latency, then forwards it once', async () => {
      const scenario = closing(await startScenario(transport, { rules: [{ name: 'lag', route: 'GET /items/*', kind: 'latency', delay: 0.25 }] }))
      const started = performance.now()
      const response = await fetch(`${scenario.baseUrl}/items/sku-9`)
      expect(performance.now() - started).toBeGreaterThanOrEqual(240)
      expect(response.status).toBe(200)
      expect(((await response.json()) as { id: string }).id).toBe('sku-9')
      expect(scenario.upstream.hits()).toBe(1)
      const report = await scenario.report()
      expect(report.calls[0]).toMatchObject({ executed: true, injected: true, kind: 'latency' })
      expect(report.calls[0]?.elapsed).toBeGreaterThanOrEqual(0.24)
    })

    it('resets the connection before the upstream sees anything', async () => {
      const scenario = closing(await startScenario(transport, { rules: [{ name: 'rst', route: 'POST /ship', kind: 'reset' }] }))
      const error = await fetch(`${scenario.baseUrl}/ship`, { method: 'POST', body: '{"order":"o-2"}' }).then(
        () => null,
        (e: unknown) => e as TypeError & { cause: NodeJS.ErrnoException },
      )
      expect(error).toBeInstanceOf(TypeError)
      // MSW answers a reset with its network error (docs/in-process.md), not an ECONNRESET.
      if (transport === 'msw') expect(error?.message).toBe('Failed to fetch')
      else expect(error?.cause?.code).toBe('ECONNRESET')
      expect(scenario.upstream.hits()).toBe(0)
      const report = await scenario.report()
      expect(report.calls[0]).toMatchObject({ outcome: 'reset', status: null, executed: false, injected: true })
    })
  })
}
