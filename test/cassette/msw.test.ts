import { http, HttpResponse } from 'msw'
import { setupServer } from 'msw/node'
import { describe, expect, it } from 'vitest'
import { cassetteHandlers } from '../../src/cassette/replay/cassette-handlers.js'
import { createCassetteRecorder } from '../../src/cassette/record/cassette-recorder.js'
import { Cassette } from '../../src/cassette/format/cassette.js'
import { CassetteUnusedError } from '../../src/errors.js'
import { createStorm } from '../../src/engine/storm.js'
import { stormHandlers } from '../../src/interceptors/msw-handlers.js'
import { closing } from '../helpers/teardown.js'

const ship = (order: string) => fetch('https://tools.test/ship', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ order }) }).then((r) => r.status, () => 'network error')

describe('cassettes with MSW', () => {
  it('records storm handlers with a recorder, then replays as MSW handlers with no tool handler', async () => {
    const storm = createStorm({ rules: [{ name: 'busy', route: 'POST /ship', kind: 'rate_limit', calls: [1], delay: 1 }, { name: 'lost', route: 'POST /ship', kind: 'response_lost', calls: [2] }] })
    const recorder = createCassetteRecorder(storm)
    const tools = [
      http.post('https://tools.test/ship', async ({ request }) => {
        const { order } = (await request.json()) as { order: string }
        storm.effect('shipment', order)
        return HttpResponse.json({ order }, { status: 201 })
      }),
    ]
    const server = closing(setupServer(...stormHandlers(storm, { tools, observer: recorder.observer, filter: (url) => url.hostname === 'tools.test' })))
    server.listen({ onUnhandledRequest: 'error' })
    const recorded = [await ship('o-1'), await ship('o-1'), await ship('o-1')]
    expect(recorded).toEqual([429, 'network error', 201])
    server.close()
    await recorder.close()
    const cassette = await recorder.cassette()
    expect(cassette.exchanges.map((e) => e.effects.map((f) => f.key))).toEqual([[], ['o-1'], ['o-1']])

    const replay = cassetteHandlers(cassette)
    const replayServer = closing(setupServer(...replay.handlers))
    replayServer.listen({ onUnhandledRequest: 'error' })
    expect([await ship('o-1'), await ship('o-1')]).toEqual([429, 'network error'])
    expect(() => replay.assertDone()).toThrow(CassetteUnusedError)
    expect(await ship('o-1')).toBe(201)
    replay.assertDone()
    expect(replay.report()).toMatchObject({ passed: true, duplicateEffects: 1 })
  })

  it('turns a report into a status-only cassette that matches method and URL', async () => {
    const storm = createStorm({ rules: [{ name: 'busy', route: 'POST /ship', kind: 'rate_limit', calls: [1], delay: 1 }] })
    const server = closing(setupServer(...stormHandlers(storm, { tools: [http.post('https://tools.test/ship', () => HttpResponse.json({}, { status: 201 }))] })))
    server.listen({ onUnhandledRequest: 'error' })
    await ship('a')
    await ship('b')
    server.close()
    const cassette = Cassette.fromReport(storm.report())
    expect(cassette.exchanges.map((e) => [e.response?.status, e.request.bodyUnknown, e.fault?.kind ?? null])).toEqual([
      [429, true, 'rate_limit'],
      [201, true, null],
    ])
    const replay = cassetteHandlers(Cassette.parse(cassette.toString()))
    const replayServer = closing(setupServer(...replay.handlers))
    replayServer.listen({ onUnhandledRequest: 'error' })
    expect([await ship('x'), await ship('y')]).toEqual([429, 201])
    replay.assertDone()
  })
})
