import { describe, expect, it } from 'vitest'
import { CassetteMismatchError, CassetteUnusedError } from '../../errors.js'
import { Cassette } from '../format/cassette.js'
import { exchangeAt } from '../../../test/helpers/cassette-fixtures.js'
import type { ReplayOptions } from './replay-options.js'
import { ReplaySession } from './replay-session.js'
import { formatReplayTable } from './replay-table.js'

const cassette = Cassette.from({}, [exchangeAt(1), exchangeAt(2), exchangeAt(3)])
const get = (url: string) => ({ method: 'GET', url, headers: {}, body: null })

async function play(session: ReplaySession, urls: string[]): Promise<string[]> {
  const out: string[] = []
  for (const url of urls) {
    const decision = await session.decide(session.begin(), get(url))
    out.push(decision.type === 'serve' ? `${decision.position + 1}${decision.repeat ? 'r' : ''}` : decision.type === 'refuse' ? decision.error.code : 'pass')
  }
  return out
}

const session = (options: ReplayOptions = {}) => new ReplaySession(cassette, options)

describe('replay sessions', () => {
  it('serve recorded exchanges in order and pass when all were used', async () => {
    const replay = session()
    expect(await play(replay, ['/items/1', '/items/2', 'http://api.test/items/3'])).toEqual(['1', '2', '3'])
    expect(replay.verdict()).toMatchObject({ passed: true, served: 3, message: 'Replayed 3 of 3 exchange(s) from <memory>.' })
  })

  it('fail for good at the first request out of order, and refuse the rest', async () => {
    const replay = session()
    expect(await play(replay, ['/items/2', '/items/1'])).toEqual(['ERR_CASSETTE_MISMATCH', 'ERR_CASSETTE_MISMATCH'])
    const verdict = replay.verdict()
    expect(verdict.message).toBe('Failed to replay "GET /items/2" (request 1): it differs from exchange 1 of <memory> (GET /items/:id · GET /items/1): path differs (expected /items/1); the closest recorded is exchange 2 (GET /items/:id · GET /items/2): it matches this one, recorded at another position (strict order). Re-record the cassette, or relax matching (see https://github.com/toolstorm/toolstorm/blob/main/docs/cassettes.md).')
    expect(formatReplayTable(verdict.rows)).toBe(
      [
        'req  #  expected                       seen          result',
        '  1  1  GET /items/:id · GET /items/1  GET /items/2  mismatch: path differs (expected /items/1)',
        '        closest recorded: exchange 2 (GET /items/:id · GET /items/2, same route): it matches this one, recorded at another position (strict order)',
        '  2  -  —                              GET /items/1  refused: the replay already diverged',
        '  -  1  GET /items/:id · GET /items/1  —             unused',
        '  -  2  GET /items/:id · GET /items/2  —             unused',
        '  -  3  GET /items/:id · GET /items/3  —             unused',
      ].join('\n'),
    )
  })

  it('fail an extra request, unless repeats are allowed', async () => {
    expect(await play(session(), ['/items/1', '/items/2', '/items/3', '/items/3'])).toEqual(['1', '2', '3', 'ERR_CASSETTE_EXTRA'])
    const repeating = session({ allowRepeats: true })
    expect(await play(repeating, ['/items/1', '/items/1', '/items/2', '/items/3', '/items/3'])).toEqual(['1', '1r', '2', '3', '3r'])
    expect(repeating.verdict()).toMatchObject({ passed: true, repeats: 2 })
  })

  it('fail on unused exchanges with a typed error carrying the table, unless allowed', async () => {
    const replay = session()
    await play(replay, ['/items/1'])
    expect(() => replay.assertDone()).toThrow(CassetteUnusedError)
    expect(() => replay.assertDone()).toThrow('Failed to finish the replay of <memory>: 2 recorded exchange(s) were never requested (first: exchange 2, GET /items/:id · GET /items/2). Re-record the cassette, or pass --allow-unused.')
    const lenient = session({ allowUnused: true })
    await play(lenient, ['/items/1'])
    expect(() => lenient.assertDone()).not.toThrow()
  })

  it('match in any order when asked, still failing on what matches nothing', async () => {
    const replay = session({ order: 'any' })
    expect(await play(replay, ['/items/3', '/items/1', '/items/9', '/items/2'])).toEqual(['3', '1', 'ERR_CASSETTE_MISMATCH', '2'])
    let thrown: unknown
    try {
      replay.assertDone()
    } catch (error) {
      thrown = error
    }
    expect(thrown).toBeInstanceOf(CassetteMismatchError)
    expect((thrown as CassetteMismatchError).details).toContain('GET /items/9  mismatch: no recorded exchange matches')
  })

  it('let unmatched requests through in passthrough mode', async () => {
    expect(await play(session({ passthroughUnmatched: true }), ['/items/9', '/items/1'])).toEqual(['pass', '1'])
  })

  it('keep arrival order for concurrent requests whose bodies finish out of order', async () => {
    const replay = session()
    const first = replay.begin()
    const second = replay.begin()
    expect((await replay.decide(second, get('/items/2'))).type).toBe('serve')
    expect((await replay.decide(first, get('/items/1'))).type).toBe('serve')
  })
})
