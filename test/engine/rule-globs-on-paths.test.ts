/**
 * A rule's glob matches a request's `METHOD /path` as well as its declared route name (#29): the
 * headline example of docs/rules.md, `GET /inventory/*` with `check_inventory` declared as
 * `GET /inventory/:sku`, fires, while calls keep the declared name (ordinals, reports, coverage).
 * On every base-URL transport, through replicas sharing Redis, and when a saved report or cassette is read.
 */
import { describe, expect, it } from 'vitest'
import type { StormConfigInput } from '../../src/engine/schema/config.js'
import { validateReport } from '../../src/report/validate-report.js'
import { startProxy } from '../../src/proxy/proxy-server.js'
import { contract } from '../../src/index.js'
import { hasRedis, startRedis } from '../helpers/redis-server.js'
import { closing } from '../helpers/teardown.js'
import { startScenario } from '../helpers/scenario.js'
import { BASE_URL_TRANSPORTS } from '../helpers/transports.js'
import { startUpstream } from '../helpers/upstream.js'

const CONFIG: StormConfigInput = {
  seed: 42,
  routes: { check_item: 'GET /items/:sku' },
  rules: [{ name: 'items-busy', route: 'GET /items/*', kind: 'rate_limit', calls: [1, 2], delay: 0.2 }],
}

describe('a METHOD /path glob on a declared route', () => {
  for (const transport of BASE_URL_TRANSPORTS) {
    it(`fires on the declared route's requests by their path (${transport})`, async () => {
      const scenario = closing(await startScenario(transport, CONFIG))
      const statuses = []
      for (const sku of ['a', 'b', 'c']) statuses.push((await fetch(`${scenario.baseUrl}/items/${sku}`)).status)
      expect(statuses).toEqual([429, 429, 200])
      const report = await scenario.report()
      expect(report.calls.map((call) => [call.route, call.ordinal, call.fault])).toEqual([
        ['check_item', 1, 'items-busy'],
        ['check_item', 2, 'items-busy'],
        ['check_item', 3, null],
      ])
      expect(report.coverage['items-busy']).toEqual({ eligible: 2, selected: 2, triggered: 2 })
      // A saved report is re-validated with coverage recomputed from its calls: it must agree.
      expect(() => validateReport(JSON.parse(JSON.stringify(report)), 'report.json')).not.toThrow()
      contract(report).requireTriggered().assertValid()
    })
  }

  it.skipIf(!hasRedis)('fires the same way on replicas sharing Redis', async () => {
    const redis = await startRedis()
    const upstream = await startUpstream()
    const options = { targets: [upstream.url], config: CONFIG, state: { url: redis.url } }
    const a = await startProxy(options)
    const b = await startProxy(options)
    try {
      expect([(await fetch(`${a.url}/items/a`)).status, (await fetch(`${b.url}/items/b`)).status, (await fetch(`${a.url}/items/c`)).status]).toEqual([429, 429, 200])
      const report = await a.state!.report()
      expect(report.coverage['items-busy']).toEqual({ eligible: 2, selected: 2, triggered: 2 })
    } finally {
      await a.close()
      await b.close()
      await upstream.close()
      await redis.close()
    }
  })
})
