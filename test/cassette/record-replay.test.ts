import http from 'node:http'
import { describe, expect, it } from 'vitest'
import { startReplayServer } from '../../src/proxy/replay/replay-server.js'
import { clientFor, recordThroughProxy, shippingTraffic } from '../helpers/cassette.js'
import { closing } from '../helpers/teardown.js'
import { PROXY_TRANSPORTS } from '../helpers/transports.js'


for (const mode of PROXY_TRANSPORTS) {
  describe(`record through the proxy, replay with no upstream (${mode} mode)`, () => {
    it('replays the same statuses, bodies and faults at the same positions', async () => {
      const recorded = await recordThroughProxy(mode, shippingTraffic)
      expect(recorded.result.map((o) => o.status ?? o.error)).toEqual([429, 200, 'ECONNRESET', 201, 200])
      expect(recorded.result[0]?.retryAfter).toBe('2')
      expect(recorded.commits).toEqual(['o-1', 'o-1'])

      const replay = closing(await startReplayServer(recorded.cassette))
      const client = clientFor(mode, replay.url, recorded.upstreamUrl)
      const replayed = await shippingTraffic(client)
      await client.close()
      expect(replayed).toEqual(recorded.result)
      const verdict = await replay.close()
      expect(verdict).toMatchObject({ passed: true, served: 5, expected: 5, code: null })
    })

    it('keeps the lost response\'s real answer and the effects as evidence, and reports them at replay', async () => {
      const recorded = await recordThroughProxy(mode, shippingTraffic)
      const { cassette } = recorded
      const lost = cassette.exchanges[2]!
      expect(lost).toMatchObject({ outcome: 'reset', response: null, executed: true, error: 'ECONNRESET', fault: { rule: 'lost-ack', kind: 'response_lost', injected: true } })
      expect(JSON.parse(lost.upstream!.body!.data)).toEqual({ shipment: 1, order: 'o-1' })
      expect(cassette.exchanges.map((e) => e.effects.map((f) => [f.name, f.key, f.identity]))).toEqual([[], [], [['shipment', 'o-1', 1]], [['shipment', 'o-1', 1]], []])
      expect(cassette.exchanges[4]!.response!.body).toMatchObject({ decoded: 'gzip', encoding: 'utf8' })

      const replay = closing(await startReplayServer(cassette))
      const client = clientFor(mode, replay.url, recorded.upstreamUrl)
      await shippingTraffic(client)
      await client.close()
      const response = await fetch(`${replay.adminUrl}/report`, { headers: { authorization: `Bearer ${replay.token}` } })
      const report = (await response.json()) as { effects: Array<{ position: number; key: string }> }
      expect(report).toMatchObject({ kind: 'toolstorm.replay', passed: true, served: 5, duplicateEffects: 1 })
      expect(report.effects.map((e: { position: number; key: string }) => [e.position, e.key])).toEqual([
        [3, 'o-1'],
        [4, 'o-1'],
      ])
    })
  })
}

describe('replay server', () => {
  it('serves a cassette recorded in forward mode to a base-URL client, and one recorded in reverse mode to a proxy client', async () => {
    const forward = await recordThroughProxy('forward', shippingTraffic)
    const replay = closing(await startReplayServer(forward.cassette))
    const baseClient = clientFor('reverse', replay.url, '')
    expect((await shippingTraffic(baseClient)).map((o) => o.status ?? o.error)).toEqual([429, 200, 'ECONNRESET', 201, 200])
    expect((await replay.close()).passed).toBe(true)

    const reverse = await recordThroughProxy('reverse', shippingTraffic)
    const replayAgain = closing(await startReplayServer(reverse.cassette))
    const proxyClient = clientFor('forward', replayAgain.url, 'http://tools.example.test')
    expect((await shippingTraffic(proxyClient)).map((o) => o.status ?? o.error)).toEqual([429, 200, 'ECONNRESET', 201, 200])
    await proxyClient.close()
    expect((await replayAgain.close()).passed).toBe(true)
  })

  it('matches a replay that carries a different real credential', async () => {
    const secret = (tag: string) => 'sk' + '-proj-' + tag.repeat(20) + 'T3Blbk' + 'FJ' + tag.repeat(20)
    const call = (token: string) => async (client: ReturnType<typeof clientFor>) => [
      await client.request(`/echo?api_key=${token}&q=1`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'x-api-key': token, 'content-type': 'application/json' },
        body: JSON.stringify({ api_key: token, note: `key ${token}`, order: 'o-9' }),
      }),
    ]
    const { cassette, result } = await recordThroughProxy('reverse', call(secret('aB3')), { config: { rules: [] } })
    expect(result[0]?.status).toBe(200)
    const replay = closing(await startReplayServer(cassette))
    const client = clientFor('reverse', replay.url, '')
    const replayed = await call(secret('zQ9'))(client)
    expect(replayed[0]?.status).toBe(200)
    expect(replayed[0]?.body).not.toContain(secret('aB3'))
    expect((await replay.close()).passed).toBe(true)
  })

  it('replays concurrent requests in the order their heads arrived, however their bodies stream', async () => {
    // The first request's body arrives after the second request is complete.
    const post = (base: string, order: string, delayMs: number) =>
      new Promise<string>((resolve, reject) => {
        const body = JSON.stringify({ order })
        const req = http.request(`${base}/ship`, { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
          let text = ''
          res.on('data', (chunk: Buffer) => (text += chunk))
          res.on('end', () => resolve(`${res.statusCode} ${text}`))
        })
        req.on('error', reject)
        req.flushHeaders()
        setTimeout(() => req.end(body), delayMs)
      })
    const traffic = async (client: ReturnType<typeof clientFor>) => {
      const slow = post(client.base, 'slow', 200)
      await new Promise((resolve) => setTimeout(resolve, 50))
      return [await post(client.base, 'fast', 0), await slow]
    }
    const recorded = await recordThroughProxy('reverse', traffic, { config: { rules: [] } })
    expect(recorded.cassette.exchanges.map((e) => e.request.body?.data)).toEqual(['{"order":"slow"}', '{"order":"fast"}'])
    const replay = closing(await startReplayServer(recorded.cassette))
    expect(await traffic(clientFor('reverse', replay.url, ''))).toEqual(recorded.result)
    expect((await replay.close()).passed).toBe(true)
  })
})
