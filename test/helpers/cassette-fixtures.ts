/** Hand-built cassette exchanges for unit tests. */
import type { CassetteExchange } from '../../src/cassette/format/cassette-schema.js'

/** A minimal valid exchange at `seq` (call id and ordinal follow it on one route). */
export function exchangeAt(seq: number, overrides: Partial<CassetteExchange> = {}): CassetteExchange {
  return {
    seq,
    run: 'default',
    call: seq,
    route: 'GET /items/:id',
    ordinal: seq,
    key: `#${seq}`,
    parent: null,
    started: seq / 10,
    elapsed: 0.01,
    request: { method: 'GET', url: `/items/${seq}`, headers: {}, body: null },
    outcome: 'response',
    response: { status: 200, headers: { 'content-type': 'application/json' }, body: { encoding: 'utf8', data: `{"id":${seq}}`, size: 8, truncated: false } },
    upstream: null,
    executed: true,
    fault: null,
    retryAfter: null,
    error: null,
    effects: [],
    ...overrides,
  }
}

/** A version 4 cassette's text as an older version wrote it: the header counts the exchanges, which alone follow. */
export function asOlderVersion(text: string, version: 1 | 2 | 3): string {
  const [header, ...rest] = text.split('\n').filter((line) => line !== '')
  const exchanges = rest.filter((line) => line.startsWith('{"seq":'))
  return [JSON.stringify({ ...JSON.parse(header as string), version, exchanges: exchanges.length }), ...exchanges, ''].join('\n')
}
