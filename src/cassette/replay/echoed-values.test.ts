import { describe, expect, it } from 'vitest'
import { REDACTED } from '../../redact/index.js'
import { Cassette } from '../format/cassette.js'
import { exchangeAt } from '../../../test/helpers/cassette-fixtures.js'
import { echoLocation, echoPlan, echoRewrite, type EchoPlan } from './echoed-values.js'
import { ReplaySession } from './replay-session.js'
import { formatReplayTable } from './replay-table.js'

const JSON_TYPE = 'application/json'
const NO_IGNORE = { ignoreQuery: [], ignoreBodyFields: [] }
const live = (url: string, body: string | null, contentType = JSON_TYPE, complete = true) => ({ url, contentType, complete, body: () => body })
const call = (token: unknown) => JSON.stringify({ jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'sync', arguments: {}, _meta: { progressToken: token } } })
const progressEvent = (token: unknown) => `event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: token, progress: 1, total: 2 } })}\n\n`

function rewritten(plan: EchoPlan | null, text: string): { text: string; unrestored: string[] } {
  const unrestored: string[] = []
  if (plan === null) return { text, unrestored }
  return { text: echoRewrite(plan, (name) => unrestored.push(name))(Buffer.from(text)).toString('utf8'), unrestored }
}

describe('echoed values in replayed answers', () => {
  it('gives each progress notification the live call\'s token, recorded as another or redacted', () => {
    for (const recorded of [3, REDACTED]) {
      const plan = echoPlan({ url: '/mcp', contentType: JSON_TYPE, body: call(recorded) }, live('/mcp', call(9)), NO_IGNORE, progressEvent(recorded))
      expect(rewritten(plan, progressEvent(recorded))).toEqual({ text: progressEvent(9), unrestored: [] })
    }
  })

  it('restores a redacted value only where the answer echoes a redacted field of the same name', () => {
    const recorded = JSON.stringify({ user: 'ann', tenant_secret: REDACTED })
    const answer = JSON.stringify({ tenant_secret: REDACTED, access_token: REDACTED, note: REDACTED })
    const plan = echoPlan({ url: '/login', contentType: JSON_TYPE, body: recorded }, live('/login', JSON.stringify({ user: 'ann', tenant_secret: 't-1' })), NO_IGNORE, answer)
    expect(JSON.parse(rewritten(plan, answer).text)).toEqual({ tenant_secret: 't-1', access_token: REDACTED, note: REDACTED })
  })

  it('gives an ignored query value (OAuth state) back in the redirect, and leaves the rest of it as recorded', () => {
    const plan = echoPlan({ url: '/authorize?client_id=c&state=s-rec&code_challenge=x', contentType: undefined, body: null }, live('/authorize?client_id=c&state=s%2Flive&code_challenge=y', null), { ignoreQuery: ['state', 'code_challenge'], ignoreBodyFields: [] }, 'http://127.0.0.1:9/cb?code=c-1&state=s-rec#f')
    expect(plan).not.toBeNull()
    expect(echoLocation('http://127.0.0.1:9/cb?code=c-1&state=s-rec#f', plan as EchoPlan, () => undefined)).toBe('http://127.0.0.1:9/cb?code=c-1&state=s%2Flive#f')
    expect(echoLocation('http://127.0.0.1:9/cb?code=c-1&state=other', plan as EchoPlan, () => undefined)).toBe('http://127.0.0.1:9/cb?code=c-1&state=other')
  })

  it('reports an echo it cannot restore: the live request holds two tokens, or its body was not read whole', () => {
    const twoTokens = JSON.stringify({ params: { _meta: { progressToken: 1 } }, extra: { progressToken: 2 } })
    const ambiguous = echoPlan({ url: '/mcp', contentType: JSON_TYPE, body: call(REDACTED) }, live('/mcp', twoTokens), NO_IGNORE, progressEvent(REDACTED))
    expect(rewritten(ambiguous, progressEvent(REDACTED))).toEqual({ text: progressEvent(REDACTED), unrestored: ['progressToken'] })
    const unread = echoPlan({ url: '/mcp', contentType: JSON_TYPE, body: call(3) }, live('/mcp', null, JSON_TYPE, false), NO_IGNORE, progressEvent(3))
    expect(rewritten(unread, progressEvent(3)).unrestored).toEqual(['progressToken'])
  })

  it('plans nothing for an answer that holds none of the names, without reading the live body', () => {
    let read = false
    const body = () => ((read = true), call(9))
    expect(echoPlan({ url: '/mcp', contentType: JSON_TYPE, body: call(3) }, { url: '/mcp', contentType: JSON_TYPE, complete: true, body }, { ignoreQuery: ['state'], ignoreBodyFields: [] }, '{"result":{}}')).toBeNull()
    expect(read).toBe(false)
  })

  it('fail the replay verdict when a served answer kept an echo it could not restore', async () => {
    const session = new ReplaySession(Cassette.from({}, [exchangeAt(1)]))
    const ticket = session.begin()
    expect((await session.decide(ticket, { method: 'GET', url: '/items/1', headers: {}, body: null })).type).toBe('serve')
    session.noteUnrestoredEchoes(ticket.request, ['progressToken'])
    const verdict = session.verdict()
    expect(verdict).toMatchObject({ passed: false, code: 'ERR_CASSETTE_MISMATCH', served: 1 })
    expect(verdict.message).toBe(
      'Failed to replay <memory> faithfully: 1 served response(s) echo a value the client sent, but replay could not give it back (first: request 1, exchange 1 (GET /items/:id · GET /items/1): progressToken), so the client got the recorded value and may drop the answer (an MCP client drops progress for a token that is not its own). The live request held several values under that name, or its body was past the body limit.',
    )
    expect(formatReplayTable(verdict.rows)).toContain('echo not restored: progressToken (the client got the recorded value)')
  })
})
