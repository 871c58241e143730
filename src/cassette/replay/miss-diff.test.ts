import { describe, expect, it } from 'vitest'
import { CassetteMismatchError } from '../../errors.js'
import { exchangeAt } from '../../../test/helpers/cassette-fixtures.js'
import { Cassette } from '../format/cassette.js'
import { jsonDiff } from './miss-diff.js'
import { replayRowSchema } from './replay-report.js'
import type { ReplayOptions } from './replay-options.js'
import { ReplaySession } from './replay-session.js'
import { formatReplayTable } from './replay-table.js'

const body = (data: string) => ({ encoding: 'utf8' as const, data, size: Buffer.byteLength(data), truncated: false })

function chat(seq: number, route: string, path: string, value: unknown, contentType = 'application/json', ordinal = 1) {
  const data = typeof value === 'string' ? value : JSON.stringify(value)
  return exchangeAt(seq, { route, ordinal, key: `#${ordinal}`, request: { method: 'POST', url: path, headers: { 'content-type': contentType }, body: body(data) } })
}

const conversation = (text: string) => ({ model: 'gpt-test', messages: [{ role: 'system', content: 'You ship boxes.' }, { role: 'user', content: text }] })

const cassette = Cassette.from({}, [
  chat(1, 'POST /v1/chat/completions', '/v1/chat/completions', conversation('You are a careful logistics agent. Please ship 2 boxes to Lyon before Friday.')),
  chat(2, 'POST /tools/ship', '/tools/ship', { boxes: 2, city: 'Lyon' }),
  chat(3, 'POST /v1/chat/completions', '/v1/chat/completions', { ...conversation('You are a careful logistics agent. Please ship 2 boxes to Lyon before Friday.'), temperature: 0 }, 'application/json', 2),
  chat(4, 'POST /upload', '/upload', 'line one\nline two\n', 'text/plain'),
])

async function miss(options: ReplayOptions, url: string, value: unknown, contentType = 'application/json') {
  const session = new ReplaySession(cassette, options)
  const data = typeof value === 'string' ? value : JSON.stringify(value)
  const decision = await session.decide(session.begin(), { method: 'POST', url, headers: { 'content-type': contentType }, body: new TextEncoder().encode(data) })
  if (decision.type !== 'refuse') throw new Error(`expected a miss, got ${decision.type}`)
  return { session, decision }
}

describe('a diff on every miss', () => {
  it('names the differing JSON path with short values around the difference, in the error, the row and the table', async () => {
    const { session, decision } = await miss({}, '/v1/chat/completions', conversation('You are a careful logistics agent. Please ship 3 boxes to Lyon before Friday.'))
    expect(decision.diff).toEqual({
      position: 1,
      exchange: 'POST /v1/chat/completions',
      closeness: 'same route',
      difference: 'body differs',
      paths: [{ path: '$.messages[1].content', expected: '"…t. Please ship 2 boxes to Lyon before Fr…"', seen: '"…t. Please ship 3 boxes to Lyon before Fr…"' }],
      morePaths: 0,
      bytes: null,
    })
    expect(decision.error.message).toContain('body differs at $.messages[1].content: "…t. Please ship 2 boxes')
    expect(decision.error).toBeInstanceOf(CassetteMismatchError)
    expect(decision.error.details).toContain('$.messages[1].content: "…t. Please ship 2 boxes to Lyon before Fr…" ≠ "…t. Please ship 3 boxes')
    const row = session.verdict().rows[0]
    expect(row?.diff?.paths[0]?.path).toBe('$.messages[1].content')
    expect(replayRowSchema.parse(row)).toEqual(row)
    expect(formatReplayTable(session.verdict().rows)).toContain('\n        closest recorded: exchange 1 (POST /v1/chat/completions, same route): body differs\n        $.messages[1].content: ')
  })

  it('picks the closest exchange of the same route by body in any order, listing at most five paths', async () => {
    const seen = { ...conversation('You are a careful logistics agent. Please ship 2 boxes to Lyon before Friday.'), temperature: 0, a: 1, b: 2, c: 3, d: 4, e: 5, f: 6 }
    const { decision } = await miss({ order: 'any' }, '/v1/chat/completions', seen)
    // Exchange 3 has `temperature` too: fewer paths differ than from exchange 1.
    expect(decision.diff).toMatchObject({ position: 3, closeness: 'same route', morePaths: 1 })
    expect(decision.diff?.paths.map((path) => `${path.path}: ${path.expected} ≠ ${path.seen}`)).toEqual(['$.a: (absent) ≠ 1', '$.b: (absent) ≠ 2', '$.c: (absent) ≠ 3', '$.d: (absent) ≠ 4', '$.e: (absent) ≠ 5'])
    expect(decision.error.message).toContain('the closest is exchange 3 (POST /v1/chat/completions): body differs at $.a: (absent) ≠ 1 (and 5 more path(s))')
  })

  it('falls back to another route when none of the same route is left, saying so', async () => {
    const { decision } = await miss({ order: 'any' }, '/tools/shipping', { boxes: 3, city: 'Lyon' })
    expect(decision.diff).toMatchObject({ position: 2, closeness: 'other route', difference: 'path differs (expected /tools/ship)', paths: [{ path: '$.boxes', expected: '2', seen: '3' }] })
  })

  it('gives the first differing byte and both lengths for bodies that are not JSON', async () => {
    const upload = new ReplaySession(cassette, { order: 'any' })
    const decision = await upload.decide(upload.begin(), { method: 'POST', url: '/upload', headers: { 'content-type': 'text/plain' }, body: new TextEncoder().encode('line one\nline 2\n') })
    expect(decision.type === 'refuse' && decision.diff).toMatchObject({ position: 4, paths: [], bytes: { offset: 14, expectedLength: 18, seenLength: 16 } })
    expect(decision.type === 'refuse' && decision.error.message).toContain('body differs from byte 14 (recorded 18 bytes, seen 16)')
  })

  it('shows values as the cassette stores them: redacted', async () => {
    const secret = { ...conversation('You are a careful logistics agent. Please ship 2 boxes to Lyon before Friday.'), api_key: 'sk-live-0123456789abcdefghijklmnopqrstuv' }
    const { decision } = await miss({}, '/v1/chat/completions', secret)
    expect(JSON.stringify(decision.diff)).not.toContain('0123456789abcdef')
    expect(decision.diff?.paths).toEqual([{ path: '$.api_key', expected: '(absent)', seen: '"[REDACTED]"' }])
  })

  it('lists differing leaves in document order, arrays by index, objects by key', () => {
    expect(jsonDiff({ a: [1, 2], b: { c: 'x' } }, { a: [1, 3, 4], b: { c: 'x', d: null } }).paths).toEqual([
      { path: '$.a[1]', expected: '2', seen: '3' },
      { path: '$.a[2]', expected: '(absent)', seen: '4' },
      { path: '$.b.d', expected: '(absent)', seen: 'null' },
    ])
  })
})
