/**
 * In-process, an exchange that ended in a reset or a lost response is not kept either (#31). msw
 * keeps every request answered with a network error (its record of the request is only dropped on
 * a response): the error's cause was the Response our sink made, whose internal Error's stack held
 * the sink, and so the exchange. The exchanges are held weakly through an observer.
 */
import http from 'node:http'
import { describe, expect, it } from 'vitest'
import type { Exchange } from '../../src/engine/exchange.js'
import type { StormConfigInput } from '../../src/engine/schema/config.js'
import { createStorm } from '../../src/engine/storm.js'
import { collectGarbage } from '../helpers/collected.js'
import { closing } from '../helpers/teardown.js'
import { IN_PROCESS, through } from '../helpers/transports.js'
import { startUpstream } from '../helpers/upstream.js'

const N = 12
const RULES: StormConfigInput = {
  rules: [
    { name: 'reset', route: 'GET /items/*', kind: 'reset' },
    { name: 'lost', route: 'POST /ship', kind: 'response_lost' },
  ],
}

/** An observer that holds every exchange weakly. */
function weakly(): { observer: { onStart(exchange: Exchange): void }; alive(): Promise<number> } {
  const refs: Array<WeakRef<Exchange>> = []
  return {
    observer: { onStart: (exchange) => void refs.push(new WeakRef(exchange)) },
    async alive() {
      expect(refs).toHaveLength(2 * N)
      for (let attempt = 0; attempt < 20; attempt++) {
        await new Promise((resolve) => setTimeout(resolve, 20))
        collectGarbage()
        if (refs.every((ref) => ref.deref() === undefined)) break
      }
      return refs.filter((ref) => ref.deref() !== undefined).length
    },
  }
}

/** N resets and N lost responses; the client errors are counted, not kept (an error's stack holds what made it until it is read). */
const failures = async (origin: string, send: (url: string, method: string) => Promise<unknown>) => {
  let failed = 0
  const count = (request: Promise<unknown>) => request.then(() => undefined, () => void failed++)
  for (let i = 0; i < N; i++) await count(send(`${origin}/items/${i}`, 'GET'))
  for (let i = 0; i < N; i++) await count(send(`${origin}/ship`, 'POST'))
  expect(failed).toBe(2 * N)
}
const viaFetch = (url: string, method: string) => fetch(url, method === 'POST' ? { method, body: '{"order":"o"}' } : {})
const viaHttp = (url: string, method: string) =>
  new Promise((resolve, reject) => {
    const req = http.request(url, { method, agent: false }, (res) => res.resume().on('end', resolve).on('error', reject))
    req.on('error', reject)
    req.end(method === 'POST' ? '{"order":"o"}' : undefined)
  })

const clients = { fetch: viaFetch, 'node:http': viaHttp }

describe('in-process, nothing of an exchange that ended in a reset is kept', () => {
  it.each(IN_PROCESS.flatMap((transport) => (['fetch', 'node:http'] as const).map((client) => [transport, client] as const)))(
    'under %s (%s)',
    async (transport, client) => {
      const tool = closing(await startUpstream())
      const held = weakly()
      await through(transport, createStorm(RULES), tool.url, { observer: held.observer })
      await failures(tool.url, clients[client])
      expect(await held.alive()).toBe(0)
    },
  )
})
