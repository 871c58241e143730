/**
 * The admin API refuses query parameters its endpoints do not take (issue #22, item 4): 400
 * naming them, never a silently ignored `?run=` where an endpoint has no runs, or a misspelled
 * `?runs=`.
 */
import { describe, expect, it } from 'vitest'
import { Cassette } from '../../src/cassette/format/cassette.js'
import { startReplayServer } from '../../src/proxy/replay/replay-server.js'
import { startProxied } from '../helpers/proxied.js'
import { closing } from '../helpers/teardown.js'

const RULES = JSON.stringify({ rules: [{ name: 'busy', route: 'GET /items/*', kind: 'rate_limit', calls: [1], delay: 1 }] })

async function errorOf(response: Response): Promise<{ status: number; code: string; message: string }> {
  const body = (await response.json()) as { error: { code: string; message: string } }
  return { status: response.status, code: body.error.code, message: body.error.message }
}

describe('admin API query parameters', () => {
  it('refuses a misspelled run on PUT /rules, and keeps the rules in force', async () => {
    const env = closing(await startProxied('reverse'))
    const before = await (await env.admin('/rules')).json()
    const refused = await env.admin('/rules?runs=worker-1', { method: 'PUT', headers: { 'content-type': 'application/json' }, body: RULES })
    expect(await errorOf(refused)).toEqual({
      status: 400,
      code: 'ERR_ADMIN_QUERY_INVALID',
      message: 'Failed to use PUT /rules: unknown query parameter "runs" (it takes "run"). See docs/admin-api.md.',
    })
    expect(await (await env.admin('/rules')).json()).toEqual(before)
    expect((await env.admin('/rules?run=worker-1', { method: 'PUT', headers: { 'content-type': 'application/json' }, body: RULES })).status).toBe(200)
  })

  it.each([
    ['GET', '/report?runs=a', 'Failed to use GET /report: unknown query parameter "runs" (it takes "run").'],
    ['GET', '/runs?limit=5&offset=1', 'Failed to use GET /runs: unknown query parameters "limit", "offset" (it takes none).'],
    ['POST', '/reset?all=1', 'Failed to use POST /reset: unknown query parameter "all" (it takes "run").'],
    ['GET', '/events?since=3', 'Failed to use GET /events: unknown query parameter "since" (it takes "run").'],
    ['PUT', '/dashboard/rules?run=a', 'Failed to use PUT /dashboard/rules: unknown query parameter "run" (it takes none).'],
    ['POST', '/contract?run=a&strict=1', 'Failed to use POST /contract: unknown query parameter "strict" (it takes "run").'],
  ])('answers %s %s with 400 naming the parameter', async (method, path, message) => {
    const env = closing(await startProxied('reverse'))
    const response = await env.admin(path, { method, ...(method === 'PUT' ? { headers: { 'content-type': 'application/json' }, body: RULES } : {}) })
    expect(await errorOf(response)).toEqual({ status: 400, code: 'ERR_ADMIN_QUERY_INVALID', message: `${message} See docs/admin-api.md.` })
  })

  it('accepts the parameters endpoints take, and the token as a parameter anywhere', async () => {
    const env = closing(await startProxied('reverse'))
    await fetch(`${env.proxy.url}/items/a`, { headers: { 'x-toolstorm-run': 'worker-1' } })
    expect((await env.admin('/report?run=worker-1')).status).toBe(200)
    expect((await fetch(`${env.proxy.adminUrl}/report?run=worker-1&token=${env.proxy.token}`)).status).toBe(200)
    expect((await env.admin('/reset?run=worker-1', { method: 'POST' })).status).toBe(200)
    // Not authenticated: 401 first, whatever the parameters.
    expect((await fetch(`${env.proxy.adminUrl}/report?nonsense=1`)).status).toBe(401)
  })

  it('the replay server checks its own endpoints too', async () => {
    const replay = closing(await startReplayServer(Cassette.from({}, [])))
    const admin = (path: string) => fetch(`${replay.adminUrl}${path}`, { headers: { authorization: `Bearer ${replay.token}` } })
    expect((await admin('/verdict')).status).toBe(200)
    expect(await errorOf(await admin('/verdict?strict=1'))).toMatchObject({ status: 400, code: 'ERR_ADMIN_QUERY_INVALID' })
  })
})
