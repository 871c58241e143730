import http from 'node:http'
import path from 'node:path'
import { describe, expect } from 'vitest'
import { createCassetteRecorder } from '../../src/cassette/record/cassette-recorder.js'
import { Cassette } from '../../src/cassette/format/cassette.js'
import { replayCassette } from '../../src/cassette/replay/replay-cassette.js'
import { CassetteMismatchError } from '../../src/errors.js'
import { createStorm } from '../../src/create-storm.js'
import { intercept } from '../../src/interceptors/intercept.js'
import { test as it } from '../helpers/file-fixtures.js'
import { FAULT_RULES } from '../helpers/proxied.js'
import { startUpstream } from '../helpers/upstream.js'

/** What fetch and node:http observe, as comparable values. */
async function traffic(base: string): Promise<unknown[]> {
  const viaFetch = async (pathname: string, init?: RequestInit) => {
    try {
      const response = await fetch(base + pathname, init)
      return [response.status, response.headers.get('retry-after'), await response.text()]
    } catch (error) {
      return [(error as Error).message, (error as { cause?: { code?: string } }).cause?.code]
    }
  }
  const viaHttp = (pathname: string, body?: string) =>
    new Promise<unknown[]>((resolve) => {
      const req = http.request(base + pathname, { method: body ? 'POST' : 'GET', headers: body ? { 'content-type': 'application/json' } : {} }, (res) => {
        let text = ''
        res.on('data', (chunk: Buffer) => (text += chunk))
        res.on('end', () => resolve([res.statusCode, text]))
      })
      req.on('error', (error: NodeJS.ErrnoException) => resolve([error.code]))
      req.end(body)
    })
  return [
    await viaFetch('/items/a'),
    await viaHttp('/items/a'),
    await viaFetch('/ship', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"order":"o-1"}' }),
    await viaHttp('/ship', '{"order":"o-1"}'),
  ]
}

describe('in-process record and replay', () => {
  it('records through intercept() and replays with no upstream, faults as real errors', async ({ dir }) => {
    const upstream = await startUpstream()
    const storm = createStorm({ ...FAULT_RULES, rules: [...FAULT_RULES.rules!, { name: 'lost-again', route: 'POST /ship', kind: 'response_lost', calls: [2] }] })
    const recorder = createCassetteRecorder(storm)
    const interception = intercept(storm, { filter: (url) => url.origin === upstream.url, observer: recorder.observer })
    const recorded = await traffic(upstream.url)
    interception.dispose()
    await upstream.close()
    expect(recorded).toEqual([
      [429, '2', expect.stringContaining('rate_limit_error')],
      [200, expect.stringContaining('"id":"a"')],
      ['fetch failed', 'ECONNRESET'],
      ['ECONNRESET'],
    ])
    const file = path.join(dir, 'in-process.cassette.jsonl')
    await recorder.save(file)
    await recorder.close()

    const replay = replayCassette(await Cassette.load(file))
    try {
      expect(await traffic(upstream.url)).toEqual(recorded)
      expect(replay.verdict()).toMatchObject({ passed: true, served: 4 })
      const extra = await fetch(`${upstream.url}/items/zzz`)
      expect(extra.status).toBe(422)
      expect(((await extra.json()) as { error: { code: string } }).error.code).toBe('ERR_CASSETTE_EXTRA')
    } finally {
      replay.dispose()
    }
    expect(() => replay.assertDone()).toThrow(CassetteMismatchError)
    expect(replay.report()).toMatchObject({ kind: 'toolstorm.replay', mode: 'in-process', passed: false, code: 'ERR_CASSETTE_EXTRA' })
  })

  it('replays a cassette recorded through the proxy to in-process clients', async () => {
    const { recordThroughProxy, shippingTraffic } = await import('../helpers/cassette.js')
    const { cassette, upstreamUrl, result } = await recordThroughProxy('forward', shippingTraffic)
    const replay = replayCassette(cassette, { filter: (url) => url.origin === upstreamUrl })
    try {
      const statuses = []
      for (const [pathname, init] of [['/items/a'], ['/items/a?b=2&a=1'], ['/ship', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"order":"o-1"}' }], ['/ship', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"order":"o-1"}' }], ['/gzip']] as Array<[string, RequestInit?]>) {
        statuses.push(await fetch(upstreamUrl + pathname, init).then((r) => r.status, (e: { cause?: { code?: string } }) => e.cause?.code))
      }
      expect(statuses).toEqual(result.map((o) => o.status ?? o.error))
    } finally {
      replay.dispose()
    }
    replay.assertDone()
  })
})
