import { describe, expect, it } from 'vitest'
import { combineObservers } from '../../src/combine-observers.js'
import type { ExchangeObserver } from '../../src/engine/exchange-flow.js'
import { closing } from '../helpers/teardown.js'
import { startScenario } from '../helpers/scenario.js'
import { BASE_URL_TRANSPORTS } from '../helpers/transports.js'

/** An observer that wants the paths it is given and notes every hook it sees. */
function watching(...paths: string[]) {
  const seen: string[] = []
  const observer: ExchangeObserver = {
    wants: (exchange) => paths.includes(exchange.url.pathname),
    onStart: (exchange) => void seen.push(`start ${exchange.url.pathname}`),
    onUpstreamHead: (exchange, status) => void seen.push(`head ${exchange.url.pathname} ${status}`),
    onFinished: (exchange) => void seen.push(`finished ${exchange.url.pathname}`),
  }
  return { observer, seen }
}

for (const transport of BASE_URL_TRANSPORTS) {
  describe(`observers choose their exchanges (${transport})`, () => {
    it('show each observer only the exchanges it wants, also when combined', async () => {
      const echo = watching('/echo')
      const items = watching('/items/a')
      const scenario = closing(await startScenario(transport, { rules: [] }, { observer: combineObservers(echo.observer, items.observer) }))
      expect((await fetch(`${scenario.baseUrl}/items/a`)).status).toBe(200)
      expect((await fetch(`${scenario.baseUrl}/echo`, { method: 'POST', body: 'x' })).status).toBe(200)
      expect((await fetch(`${scenario.baseUrl}/items/b`)).status).toBe(200)
      expect(echo.seen).toEqual(['start /echo', 'head /echo 200', 'finished /echo'])
      expect(items.seen).toEqual(['start /items/a', 'head /items/a 200', 'finished /items/a'])
      expect((await scenario.report()).calls.map((call) => [call.route, call.outcome, call.status])).toEqual([
        ['GET /items/a', 'response', 200],
        ['POST /echo', 'response', 200],
        ['GET /items/b', 'response', 200],
      ])
    })
  })
}
