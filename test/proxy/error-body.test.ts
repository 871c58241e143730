/**
 * One JSON error shape wherever a toolstorm server answers an error itself (issue #16): the admin
 * API, the proxy's data plane and the replay server all answer {"error":{"type","code","message"}}.
 */
import http from 'node:http'
import { describe, expect, it } from 'vitest'
import { Cassette } from '../../src/cassette/format/cassette.js'
import { startReplayServer } from '../../src/proxy/replay/replay-server.js'
import { startProxy } from '../../src/proxy/proxy-server.js'
import { exchangeAt } from '../helpers/cassette-fixtures.js'
import { closing } from '../helpers/teardown.js'

/** A GET with the headers given as is (node:http sends a Host of `a b` unchanged). */
function get(url: string, headers: Record<string, string> = {}): Promise<{ status: number; type: string | undefined; body: unknown }> {
  const { hostname, port, pathname } = new URL(url)
  return new Promise((resolve, reject) => {
    http
      .get({ host: hostname, port, path: pathname, headers, agent: false }, (res) => {
        let text = ''
        res.on('data', (chunk: Buffer) => (text += chunk.toString()))
        res.on('end', () => resolve({ status: res.statusCode ?? 0, type: res.headers['content-type'], body: JSON.parse(text) }))
      })
      .on('error', reject)
  })
}

/** Exactly the keys type, code and message, as strings, and a code of ours. */
const ERROR_BODY = { error: { type: expect.any(String), code: expect.stringMatching(/^ERR_[A-Z_]+$/), message: expect.any(String) } }

describe('error bodies', () => {
  it('have the same shape from the admin API, the data plane and the replay server', async () => {
    const proxy = closing(await startProxy({ targets: ['http://127.0.0.1:9'] }))
    const admin = await get(`${proxy.adminUrl}/report`)
    const dataPlane = await get(`${proxy.url}/items/1`, { host: 'a b' })
    const replay = closing(await startReplayServer(Cassette.from({}, [exchangeAt(1)]), { allowUnused: true }))
    const mismatch = await get(`${replay.url}/items/other`)

    expect(admin).toMatchObject({ status: 401, type: expect.stringMatching(/^application\/json/) })
    expect(admin.body).toEqual({ error: { type: 'admin_error', code: 'ERR_ADMIN_UNAUTHORIZED', message: expect.stringMatching(/^Failed to use the admin API/) } })
    expect(dataPlane).toMatchObject({ status: 400, type: 'application/json' })
    expect(dataPlane.body).toEqual({ error: { type: 'proxy_error', code: 'ERR_REQUEST_UNROUTABLE', message: expect.stringMatching(/^\[toolstorm\] Failed to route "GET \/items\/1": the Host header "a b"/) } })
    expect(mismatch).toMatchObject({ status: 422, type: 'application/json' })
    // A miss adds its diff (docs/cassettes.md#what-a-miss-says): as lines in `details`, and structured.
    expect(mismatch.body).toEqual({
      error: { type: 'cassette_mismatch', code: 'ERR_CASSETTE_MISMATCH', message: expect.stringMatching(/^\[toolstorm\] Failed to replay "GET \/items\/other"/), details: [expect.stringMatching(/^closest recorded: exchange 1 /)], diff: expect.objectContaining({ position: 1, difference: 'path differs (expected /items/1)' }) },
    })
    for (const answer of [admin, dataPlane]) expect(answer.body).toEqual(ERROR_BODY)
    expect(mismatch.body).toEqual({ error: { ...ERROR_BODY.error, details: expect.any(Array), diff: expect.any(Object) } })
  })
})
