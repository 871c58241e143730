import { describe, expect, it } from 'vitest'
import type { ExchangeObserver } from '../../src/engine/exchange-flow.js'
import { closing } from '../helpers/teardown.js'
import { startScenario } from '../helpers/scenario.js'
import { BASE_URL_TRANSPORTS } from '../helpers/transports.js'

/** Collects what an observer sees, per exchange. */
function collector() {
  const seen = new Map<string, { request: string; upstream: string; upstreamStatus?: number; client?: { status: number; same: boolean }; clientBody: string; ended: string[] }>()
  const entry = (id: string) => {
    let e = seen.get(id)
    if (!e) seen.set(id, (e = { request: '', upstream: '', clientBody: '', ended: [] }))
    return e
  }
  const text = (chunk: Uint8Array) => Buffer.from(chunk).toString('utf8')
  const observer: ExchangeObserver = {
    onStart: (ex) => void entry(ex.id),
    onRequestBody: (ex, chunk) => (chunk ? (entry(ex.id).request += text(chunk)) : entry(ex.id).ended.push('request')),
    onUpstreamHead: (ex, status) => void (entry(ex.id).upstreamStatus = status),
    onUpstreamBody: (ex, chunk) => (chunk ? (entry(ex.id).upstream += text(chunk)) : entry(ex.id).ended.push('upstream')),
    onClientHead: (ex, status, _headers, same) => void (entry(ex.id).client = { status, same }),
    onClientBody: (ex, chunk) => (chunk ? (entry(ex.id).clientBody += text(chunk)) : entry(ex.id).ended.push('client')),
    onFinished: (ex) => void entry(ex.id).ended.push('finished'),
  }
  return { observer, seen }
}

for (const transport of BASE_URL_TRANSPORTS) {
  describe(`exchange observers (${transport})`, () => {
    it('see the request body, the upstream answer and what the client got', async () => {
      const { observer, seen } = collector()
      const scenario = closing(await startScenario(transport, { rules: [{ name: 'busy', route: 'GET /items/*', kind: 'rate_limit', calls: [1], delay: 1 }] }, { observer }))
      expect((await fetch(`${scenario.baseUrl}/items/a`)).status).toBe(429)
      const echoed = await (await fetch(`${scenario.baseUrl}/echo`, { method: 'POST', body: 'hello body' })).json()
      expect(echoed).toMatchObject({ body: 'hello body' })
      const [limited, echo] = [...seen.values()]
      expect(limited).toMatchObject({ request: '', upstream: '', client: { status: 429, same: false } })
      expect(limited?.clientBody).toContain('rate_limit_error')
      expect(limited?.ended).toEqual(['client', 'finished'])
      expect(echo).toMatchObject({ request: 'hello body', upstreamStatus: 200, client: { status: 200, same: true }, clientBody: '' })
      expect(JSON.parse(echo!.upstream)).toMatchObject({ body: 'hello body' })
      expect(echo?.ended).toEqual(expect.arrayContaining(['request', 'upstream', 'finished']))
    })

    it('see the upstream answer a lost response hid from the client', async () => {
      const { observer, seen } = collector()
      const scenario = closing(await startScenario(transport, { rules: [{ name: 'lost', route: 'POST /ship', kind: 'response_lost' }] }, { observer }))
      await fetch(`${scenario.baseUrl}/ship`, { method: 'POST', body: '{"order":"o-5"}' }).catch(() => undefined)
      const [lost] = [...seen.values()]
      expect(lost?.upstreamStatus).toBe(201)
      expect(JSON.parse(lost!.upstream)).toEqual({ shipment: 1, order: 'o-5' })
      expect(lost?.client).toBeUndefined()
      expect(lost?.request).toBe('{"order":"o-5"}')
    })
  })
}
