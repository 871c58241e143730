import http from 'node:http'
import { describe, expect, it } from 'vitest'
import { closing } from '../helpers/teardown.js'
import { startScenario } from '../helpers/scenario.js'
import { BASE_URL_TRANSPORTS } from '../helpers/transports.js'
import { ITEM, startResettingServer } from '../helpers/upstream.js'

async function fetchError(url: string, init?: RequestInit): Promise<TypeError & { cause?: NodeJS.ErrnoException }> {
  try {
    await fetch(url, init)
  } catch (error) {
    return error as TypeError & { cause?: NodeJS.ErrnoException }
  }
  throw new Error('expected the request to fail')
}

function httpPost(url: string, body: string): Promise<{ status: number } | { error: NodeJS.ErrnoException }> {
  return new Promise((resolve) => {
    const req = http.request(url, { method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
      res.resume()
      res.on('end', () => resolve({ status: res.statusCode ?? 0 }))
    })
    req.on('error', (error) => resolve({ error }))
    req.end(body)
  })
}

/** MSW answers a lost response with its network error (docs/in-process.md), not an ECONNRESET: fetch's message (node:http's is `Network error`). */
const MSW_NETWORK_ERROR = 'Failed to fetch'

for (const transport of BASE_URL_TRANSPORTS) {
  describe(`faults after the upstream answered (${transport})`, () => {
    it('loses the response: the upstream commits once and fetch fails as on a real reset (MSW: its network error)', async () => {
      const scenario = closing(await startScenario(transport, { seed: 42, rules: [{ name: 'lost-ack', route: 'POST /ship', kind: 'response_lost', calls: [1] }] }))
      const error = await fetchError(`${scenario.baseUrl}/ship`, { method: 'POST', body: JSON.stringify({ order: 'order-1729' }) })
      const real = await startResettingServer()
      const realError = await fetchError(`${real.url}/ship`, { method: 'POST', body: '{}' }).finally(() => real.close())
      expect(error).toBeInstanceOf(TypeError)
      if (transport === 'msw') expect(error.message).toBe(MSW_NETWORK_ERROR)
      else {
        expect(error.message).toBe(realError.message)
        expect(error.cause?.code).toBe(realError.cause?.code)
        expect(error.cause?.code).toBe('ECONNRESET')
      }
      expect(scenario.upstream.commits).toEqual(['order-1729'])

      const retry = await fetch(`${scenario.baseUrl}/ship`, { method: 'POST', body: JSON.stringify({ order: 'order-1729' }) })
      expect(retry.status).toBe(201)
      const report = await scenario.report()
      expect(report.calls.map((c) => [c.outcome, c.executed, c.injected, c.upstreamStatus])).toEqual([
        ['reset', true, true, 201],
        ['response', true, false, 201],
      ])
      expect(report.effects.map((e) => [e.name, e.key, e.call, e.identity])).toEqual([
        ['shipment', 'order-1729', 1, 1],
        ['shipment', 'order-1729', 2, 1],
      ])
      expect(report.coverage['lost-ack']).toEqual({ eligible: 1, selected: 1, triggered: 1 })
    })

    it('loses the response for a node:http client with ECONNRESET (MSW: its network error)', async () => {
      const scenario = closing(await startScenario(transport, { rules: [{ name: 'lost-ack', route: 'POST /ship', kind: 'response_lost' }] }))
      const result = await httpPost(`${scenario.baseUrl}/ship`, '{"order":"o-7"}')
      if (transport === 'msw') expect('error' in result && result.error.message).toBe('Network error')
      else expect('error' in result && result.error.code).toBe('ECONNRESET')
      expect(scenario.upstream.commits).toEqual(['o-7'])
    })

    it('loses the response as an error status with status: the upstream commits once, the client gets that status (500, 504), the report keeps the 201', async () => {
      const scenario = closing(
        await startScenario(transport, {
          rules: [
            { name: 'lost-500', route: 'POST /ship', kind: 'response_lost', calls: [1], status: 500 },
            { name: 'lost-504', route: 'POST /ship', kind: 'response_lost', calls: [2], status: 504 },
          ],
        }),
      )
      const first = await fetch(`${scenario.baseUrl}/ship`, { method: 'POST', body: JSON.stringify({ order: 'o-1' }) })
      const second = await fetch(`${scenario.baseUrl}/ship`, { method: 'POST', body: JSON.stringify({ order: 'o-2' }) })
      expect([first.status, await first.json()]).toEqual([500, { error: { type: 'upstream_error', message: 'The upstream failed (500).' } }])
      expect(second.status).toBe(504)
      expect(scenario.upstream.commits).toEqual(['o-1', 'o-2'])
      const report = await scenario.report()
      expect(report.calls.map((c) => [c.outcome, c.status, c.executed, c.injected, c.upstreamStatus, c.kind])).toEqual([
        ['response', 500, true, true, 201, 'response_lost'],
        ['response', 504, true, true, 201, 'response_lost'],
      ])
    })

    it('relays an upstream error under a lost-response rule and does not count it as triggered', async () => {
      const scenario = closing(await startScenario(transport, { rules: [{ name: 'lost-ack', route: 'GET /fail', kind: 'response_lost' }] }))
      const response = await fetch(`${scenario.baseUrl}/fail`)
      expect(response.status).toBe(500)
      expect(await response.json()).toEqual({ error: 'boom: sensitive exception message' })
      const report = await scenario.report()
      expect(report.coverage['lost-ack']).toEqual({ eligible: 1, selected: 1, triggered: 0 })
      expect(report.calls[0]).toMatchObject({ injected: false, executed: true, status: 500 })
    })

    it('drifts the types of fields in the real JSON response, the same way for the same seed', async () => {
      const bodies: unknown[] = []
      for (let i = 0; i < 2; i++) {
        // One after the other: each closes before the next starts (two interceptions would nest).
        const scenario = await startScenario(transport, { seed: 7, rules: [{ name: 'drift', route: 'GET /items/*', kind: 'schema_drift' }] })
        try {
          const response = await fetch(`${scenario.baseUrl}/items/sku-1`)
          expect(response.status).toBe(200)
          bodies.push(await response.json())
          expect(scenario.upstream.hits()).toBe(1)
        } finally {
          await scenario.close()
        }
      }
      expect(bodies[0]).toEqual(bodies[1])
      expect(bodies[0]).not.toEqual(ITEM)
      const drifted = bodies[0] as Record<string, unknown>
      const changed = Object.keys(ITEM).filter((key) => typeOf(drifted[key]) !== typeOf((ITEM as Record<string, unknown>)[key]))
      expect(changed.length).toBeGreaterThan(0)
    })

    it('drifts only the named fields', async () => {
      const scenario = closing(await startScenario(transport, { rules: [{ name: 'drift', route: 'GET /items/*', kind: 'schema_drift', fields: ['available', 'stock.warehouse'] }] }))
      const body = (await (await fetch(`${scenario.baseUrl}/items/sku-1`)).json()) as typeof ITEM
      expect(typeof body.available).not.toBe('boolean')
      expect(typeof body.stock.warehouse).not.toBe('string')
      expect(body.price).toBe(ITEM.price)
      expect(body.name).toBe(ITEM.name)
    })

    it('drifts a gzip-encoded JSON response', async () => {
      const scenario = closing(await startScenario(transport, { rules: [{ name: 'drift', route: 'GET /gzip', kind: 'schema_drift', fields: ['price'] }] }))
      const body = (await (await fetch(`${scenario.baseUrl}/gzip`)).json()) as Record<string, unknown>
      expect(typeof body.price).not.toBe('number')
      expect(body.name).toBe(ITEM.name)
    })

    it('relays a body that is not JSON unchanged and does not count schema drift as triggered', async () => {
      const scenario = closing(await startScenario(transport, { rules: [{ name: 'drift', route: 'GET /text', kind: 'schema_drift' }] }))
      const response = await fetch(`${scenario.baseUrl}/text`)
      expect(await response.text()).toBe('plain text, not json')
      expect((await scenario.report()).coverage.drift).toEqual({ eligible: 1, selected: 1, triggered: 0 })
    })
  })
}

function typeOf(value: unknown): string {
  return value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value
}
