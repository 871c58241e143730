/**
 * A check's route or effect name that matches nothing cannot pass in silence. `atMostCalls(n,
 * { route })` counts a route as a rule does (a declared route's calls by their `METHOD /path`
 * too): it counted names only, so `{ route: 'POST /ship' }` on a run that declared
 * `ship: POST /ship` passed "0 / 1 calls" after two calls. Through the admin API's `POST
 * /contract`, as the Python package asks.
 */
import { describe, expect, it } from 'vitest'
import { startProxied } from '../../helpers/proxied.js'
import { closing } from '../../helpers/teardown.js'

interface Answer {
  passed: boolean
  checks: Array<{ name: string; passed: boolean; detail: string; details?: string[] }>
}

/** Two shipments (one lost answer, one retry) through a proxy whose rules name the route `ship`; the tool server reports each commit. */
async function twoShipments() {
  const env = closing(await startProxied('reverse', { seed: 7, routes: { ship: 'POST /ship' }, rules: [{ name: 'lost-ack', route: 'ship', kind: 'response_lost', calls: [1] }] }))
  for (const order of ['o-1', 'o-2']) await fetch(`${env.base}/ship`, { method: 'POST', body: JSON.stringify({ order }) }).then((res) => res.arrayBuffer(), () => null)
  await env.effects.flush()
  const check = async (checks: unknown[]) => (await (await env.admin('/contract', { method: 'POST', body: JSON.stringify({ checks }) })).json()) as Answer
  return { env, check }
}

describe('a check on a route or an effect name', () => {
  it('counts the calls of a declared route by its METHOD /path, as a rule matches them', async () => {
    const { env, check } = await twoShipments()
    expect((await env.report()).calls.map((call) => call.route)).toEqual(['ship', 'ship'])
    const answer = await check([{ type: 'atMostCalls', count: 1, route: 'POST /ship' }, { type: 'atMostCalls', count: 1, route: 'ship' }, { type: 'atMostCalls', count: 2, route: 'POST /*' }])
    expect(answer.checks.map((c) => [c.name, c.passed, c.detail])).toEqual([
      ['Call budget: POST /ship', false, '2 / 1 calls'],
      ['Call budget: ship', false, '2 / 1 calls'],
      ['Call budget: POST /*', true, '2 / 2 calls'],
    ])
    expect(answer.checks[0]!.details).toEqual(['call 1  ship  reset  [lost-ack]', 'call 2  ship  response 201'])
  })

  it('says which routes were seen when its route matched no call', async () => {
    const { check } = await twoShipments()
    const answer = await check([{ type: 'atMostCalls', count: 1, route: 'POST /shp' }])
    expect(answer.checks[0]).toEqual({ name: 'Call budget: POST /shp', passed: true, detail: '0 / 1 calls; no call was on a route matching "POST /shp" (routes seen: ship ×2)' })
  })

  it('says which effects were seen when no effect has its name', async () => {
    const { check } = await twoShipments()
    const answer = await check([{ type: 'atMostEffects', name: 'shipmnt', count: 1 }, { type: 'effectsRequireApproval', effect: 'shipmnt', route: 'POST /approvals' }])
    expect(answer.checks.map((c) => c.detail)).toEqual([
      '0 / 1 committed effects; no effect is named "shipmnt" (effects seen: shipment ×2); did you mean "shipment"?',
      '0 "shipmnt" effect(s), each after a 2xx answer from "POST /approvals"; no effect is named "shipmnt" (effects seen: shipment ×2); did you mean "shipment"?',
    ])
  })
})
