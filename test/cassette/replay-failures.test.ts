import path from 'node:path'
import { describe, expect } from 'vitest'
import { Cassette } from '../../src/cassette/format/cassette.js'
import { formatReplayTable } from '../../src/cassette/replay/replay-table.js'
import { startReplayServer, type ReplayServer } from '../../src/proxy/replay/replay-server.js'
import { createStorm } from '../../src/create-storm.js'
import { clientFor, recordThroughProxy, shippingTraffic } from '../helpers/cassette.js'
import { test } from '../helpers/file-fixtures.js'
import { startModelUpstream } from '../helpers/model-upstream.js'
import { startUpstream } from '../helpers/upstream.js'
import { closing } from '../helpers/teardown.js'

/** `cassette`: the shipping traffic recorded once through the proxy, replayed by every case. */
const it = test.extend('cassette', { scope: 'file' }, async () => (await recordThroughProxy('reverse', shippingTraffic)).cassette)

async function adminReport(server: ReplayServer): Promise<Record<string, any>> {
  return (await fetch(`${server.adminUrl}/report`, { headers: { authorization: `Bearer ${server.token}` } })).json() as Promise<Record<string, any>>
}

describe('strict replay failures', () => {
  it('answers an extra request 422 naming it, and fails the verdict with the table', async ({ cassette }) => {
    const replay = closing(await startReplayServer(cassette))
    const client = clientFor('reverse', replay.url, '')
    await shippingTraffic(client)
    const extra = await client.request('/items/z')
    expect(extra.status).toBe(422)
    expect(JSON.parse(extra.body!)).toEqual({
      error: {
        type: 'cassette_mismatch',
        code: 'ERR_CASSETTE_EXTRA',
        message: '[toolstorm] Failed to replay "GET /items/z" (request 6): all 5 recorded exchange(s) of <recording> were already used. Re-record the cassette, or pass --allow-repeats if repeating is expected.',
      },
    })
    const report = await adminReport(replay)
    expect(report).toMatchObject({ passed: false, code: 'ERR_CASSETTE_EXTRA', served: 5, unused: 0 })
    expect(report.table.at(-1)).toEqual({ request: 6, position: null, expected: null, seen: 'GET /items/z', result: 'extra' })
  })

  it('answers a mismatched request 422 with the differing JSON path, refuses what follows, and lists the unused exchanges', async ({ cassette }) => {
    const replay = closing(await startReplayServer(cassette))
    const client = clientFor('reverse', replay.url, '')
    await client.request('/items/a')
    await client.request('/items/a?a=1&b=2')
    const wrong = await client.request('/ship', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"order":"o-2"}' })
    expect(wrong.status).toBe(422)
    const error = JSON.parse(wrong.body!).error
    expect(error.message).toBe(
      '[toolstorm] Failed to replay "POST /ship" (request 3): it differs from exchange 3 of <recording> (POST /ship): body differs at $.order: "o-1" ≠ "o-2". Re-record the cassette, or relax matching (see https://github.com/toolstorm/toolstorm/blob/main/docs/cassettes.md).',
    )
    const diff = { position: 3, exchange: 'POST /ship', closeness: 'same route', difference: 'body differs', paths: [{ path: '$.order', expected: '"o-1"', seen: '"o-2"' }], morePaths: 0, bytes: null }
    expect(error.diff).toEqual(diff)
    expect(error.details).toEqual(['closest recorded: exchange 3 (POST /ship, same route): body differs', '$.order: "o-1" ≠ "o-2"'])
    expect((await adminReport(replay)).table[2]).toEqual({ request: 3, position: 3, expected: 'POST /ship', seen: 'POST /ship', result: 'mismatch: body differs at $.order: "o-1" ≠ "o-2"', diff })
    const after = await client.request('/ship', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"order":"o-1"}' })
    expect(JSON.parse(after.body!).error.message).toContain('the replay already diverged at request 3 (body differs at $.order: "o-1" ≠ "o-2")')
    const verdict = await replay.close()
    expect(verdict).toMatchObject({ passed: false, code: 'ERR_CASSETTE_MISMATCH', served: 2, unused: 3 })
    expect(formatReplayTable(verdict.rows)).toBe(
      [
        'req  #  expected              seen                  result',
        '  1  1  GET /items/a          GET /items/a          ok',
        '  2  2  GET /items/a?b=2&a=1  GET /items/a?a=1&b=2  ok',
        '  3  3  POST /ship            POST /ship            mismatch: body differs at $.order: "o-1" ≠ "o-2"',
        '        closest recorded: exchange 3 (POST /ship, same route): body differs',
        '        $.order: "o-1" ≠ "o-2"',
        '  4  -  —                     POST /ship            refused: the replay already diverged',
        '  -  3  POST /ship            —                     unused',
        '  -  4  POST /ship            —                     unused',
        '  -  5  GET /gzip             —                     unused',
      ].join('\n'),
    )
  })

  it('fails when recorded exchanges are never requested, unless told to allow it', async ({ cassette }) => {
    const replay = closing(await startReplayServer(cassette))
    await clientFor('reverse', replay.url, '').request('/items/a')
    expect(await replay.close()).toMatchObject({ passed: false, code: 'ERR_CASSETTE_UNUSED', unused: 4 })
    const allowing = closing(await startReplayServer(cassette, { allowUnused: true }))
    await clientFor('reverse', allowing.url, '').request('/items/a')
    expect(await allowing.close()).toMatchObject({ passed: true, unused: 4 })
  })

  it('replays repeated requests again when repeats are allowed', async ({ cassette }) => {
    const replay = closing(await startReplayServer(cassette, { allowRepeats: true }))
    const client = clientFor('reverse', replay.url, '')
    const first = await shippingTraffic(client)
    const again = await client.request('/gzip')
    expect(again).toEqual(first[4])
    expect(await replay.close()).toMatchObject({ passed: true, repeats: 1 })
  })

  it('matches in any order when asked', async ({ cassette }) => {
    const replay = closing(await startReplayServer(cassette, { order: 'any' }))
    const client = clientFor('reverse', replay.url, '')
    expect((await client.request('/gzip')).status).toBe(200)
    expect((await shippingTraffic(client)).map((o) => o.status ?? o.error)).toEqual([429, 200, 'ECONNRESET', 201, 422])
    expect(await replay.close()).toMatchObject({ passed: false, code: 'ERR_CASSETTE_EXTRA' })
  })

  it('refuses a JSON body whose number differs past what a double holds (a 64-bit id, a long decimal, an overflow), and serves the same value written otherwise', async () => {
    const json = { 'content-type': 'application/json' }
    const recorded = '{"payment":12345678901234567890,"amount":1.00000000000000001,"limit":1e400}'
    const { cassette } = await recordThroughProxy('reverse', (client) => client.request('/echo', { method: 'POST', headers: json, body: recorded }), { config: {} })
    const differing: Array<[body: string, path: string, expected: string, seen: string]> = [
      ['{"payment":12345678901234567891,"amount":1.00000000000000001,"limit":1e400}', '$.payment', '12345678901234567890', '12345678901234567891'],
      ['{"payment":12345678901234567890,"amount":1,"limit":1e400}', '$.amount', '1.00000000000000001', '1'],
      ['{"payment":12345678901234567890,"amount":1.00000000000000001,"limit":null}', '$.limit', '1e400', 'null'],
    ]
    for (const [body, path, expected, seen] of differing) {
      const replay = closing(await startReplayServer(cassette))
      const answer = await clientFor('reverse', replay.url, '').request('/echo', { method: 'POST', headers: json, body })
      expect(answer.status).toBe(422)
      expect(JSON.parse(answer.body!).error.diff.paths).toEqual([{ path, expected, seen }])
      expect(await replay.close()).toMatchObject({ passed: false, code: 'ERR_CASSETTE_MISMATCH' })
    }
    const replay = closing(await startReplayServer(cassette))
    const same = await clientFor('reverse', replay.url, '').request('/echo', { method: 'POST', headers: json, body: '{"limit":10e399,"amount":1.000000000000000010,"payment":1.2345678901234567890e19}' })
    expect(same.status).toBe(200)
    expect(await replay.close()).toMatchObject({ passed: true, served: 1 })
  })
})

describe('replay modes', () => {
  it('passthrough-unmatched forwards what matches nothing and replays the rest', async ({ cassette }) => {
    const upstream = await startUpstream()
    try {
      const replay = closing(await startReplayServer(cassette, { mode: 'passthrough-unmatched', targets: [upstream.url] }))
      const client = clientFor('reverse', replay.url, '')
      const live = await client.request('/items/live')
      expect(JSON.parse(live.body!).id).toBe('live')
      expect((await shippingTraffic(client)).map((o) => o.status ?? o.error)).toEqual([429, 200, 'ECONNRESET', 201, 200])
      expect(upstream.hits()).toBe(1)
      expect(await replay.close()).toMatchObject({ passed: true, passedThrough: 1, served: 5 })
    } finally {
      await upstream.close()
    }
  })

  it('passthrough-unmatched applies a stream_cut rule to a forwarded event stream: the client sees the cut', async ({ cassette }) => {
    const upstream = await startModelUpstream({ gapMs: 5 })
    try {
      const storm = createStorm({ rules: [{ name: 'cut', route: 'GET /ticks', kind: 'stream_cut', after: 2 }] })
      const replay = closing(await startReplayServer(cassette, { mode: 'passthrough-unmatched', allowUnused: true, targets: [upstream.url], storm }))
      const response = await fetch(`${replay.url}/ticks?count=5`)
      expect(response.status).toBe(200)
      const reader = (response.body as ReadableStream<Uint8Array>).getReader()
      const decoder = new TextDecoder()
      let text = ''
      const error = await (async () => {
        try {
          for (;;) {
            const { done, value } = await reader.read()
            if (done) return null
            text += decoder.decode(value, { stream: true })
          }
        } catch (failure) {
          return failure as Error
        }
      })()
      expect(text).toBe('data: {"tick":1}\n\ndata: {"tick":2}\n\n')
      expect(error?.message).toBe('terminated')
      expect(storm.report().calls[0]).toMatchObject({ kind: 'stream_cut', injected: true, error: 'STREAM_CUT', cut: { events: 2 } })
    } finally {
      await upstream.close()
    }
  })

  it('refuses to forward an unmatched request to the replay server itself', async ({ cassette }) => {
    const replay = closing(await startReplayServer(cassette, { mode: 'passthrough-unmatched', allowUnused: true }))
    const client = clientFor('forward', replay.url, replay.url)
    const loop = await client.request('/items/loop')
    await client.close()
    // Served as a request to its base URL (HTTP_PROXY clients send those so): the cassette has none, and no target routes it.
    expect(loop.status).toBe(400)
    expect(JSON.parse(loop.body!).error.message).toBe(`[toolstorm] Failed to forward "GET ${replay.url}/items/loop": it names no upstream (it was sent to this server's own address, and no --target routes it). Send the upstream's own URL through the proxy (HTTP_PROXY), or start with --target URL.`)
  })

  it('update records what is new and rewrites the cassette as this session, which then replays strictly', async ({ cassette, dir }) => {
    const upstream = await startUpstream()
    const file = path.join(dir, 'update.cassette.jsonl')
    await cassette.save(file)
    try {
      const replay = closing(await startReplayServer(await Cassette.load(file), { mode: 'update', targets: [upstream.url] }))
      const client = clientFor('reverse', replay.url, '')
      await client.request('/items/a')
      await client.request('/items/new')
      await client.request('/items/a?b=2&a=1')
      expect(await replay.close()).toMatchObject({ passed: true, served: 2, passedThrough: 1 })
    } finally {
      await upstream.close()
    }
    const updated = await Cassette.load(file)
    expect(updated.header.source).toBe('replay-update')
    expect(updated.exchanges.map((e) => [e.seq, e.request.url, e.ordinal, e.response?.status])).toEqual([
      [1, '/items/a', 1, 429],
      [2, '/items/new', 1, 200],
      [3, '/items/a?b=2&a=1', 2, 200],
    ])
    const replay = closing(await startReplayServer(updated))
    const client = clientFor('reverse', replay.url, '')
    expect((await client.request('/items/a')).status).toBe(429)
    expect(JSON.parse((await client.request('/items/new')).body!).id).toBe('new')
    expect((await client.request('/items/a?a=1&b=2')).status).toBe(200)
    expect((await replay.close()).passed).toBe(true)
  })
})
