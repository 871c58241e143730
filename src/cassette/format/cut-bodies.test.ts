import { describe, expect, it } from 'vitest'
import { exchangeAt } from '../../../test/helpers/cassette-fixtures.js'
import type { StoredBody } from './cassette-schema.js'
import { cutBodiesOf, describeCutBodies } from './cut-bodies.js'

const cut = (size: number, decoded?: 'gzip'): StoredBody => ({ encoding: 'utf8', data: 'x', size, truncated: true, ...(decoded ? { decoded } : {}) })
const whole: StoredBody = { encoding: 'utf8', data: 'x', size: 1, truncated: false }

describe('cut bodies', () => {
  it('counts cut requests, responses and upstream answers per route, in recorded order', () => {
    const exchanges = [
      exchangeAt(1, { route: 'POST /upload', request: { method: 'POST', url: '/upload', headers: {}, body: cut(3000) }, response: { status: 200, headers: {}, body: whole } }),
      exchangeAt(2, { route: 'GET /file', response: { status: 200, headers: {}, body: cut(5000) } }),
      exchangeAt(3, { route: 'POST /upload', request: { method: 'POST', url: '/upload', headers: {}, body: whole }, response: { status: 200, headers: {}, body: whole }, upstream: { status: 201, headers: {}, body: cut(2000) } }),
    ]
    const summary = cutBodiesOf(exchanges)
    expect(summary).toEqual({
      count: 3,
      routes: [
        { route: 'POST /upload', requests: 1, responses: 0, upstream: 1 },
        { route: 'GET /file', requests: 0, responses: 1, upstream: 0 },
      ],
      largest: 5000,
      decoded: false,
    })
    expect(describeCutBodies(summary, 1000)).toBe(
      '3 bodies were cut at the body limit (1000 bytes): POST /upload (1 request, 1 upstream response), GET /file (1 response). Replay breaks them off and fails unless --allow-truncated; record with --body-limit 5000 to keep them whole.',
    )
    expect(describeCutBodies(cutBodiesOf([exchangeAt(1)]), 1000)).toBeNull()
  })

  it('names ten routes and counts the rest, and says when no limit keeps a body whole or a decoded body needs more', () => {
    const many = Array.from({ length: 12 }, (_, i) => exchangeAt(i + 1, { route: `GET /r${i}`, response: { status: 200, headers: {}, body: cut(100 * 1024 * 1024) } }))
    const text = describeCutBodies(cutBodiesOf(many), 16 * 1024 * 1024) as string
    expect(text).toContain('GET /r9 (1 response) and 2 more routes.')
    expect(text).toContain('bodies over 67108864 bytes (the largest --body-limit) cannot be kept whole: the largest was 104857600.')
    const decoded = describeCutBodies(cutBodiesOf([exchangeAt(1, { response: { status: 200, headers: {}, body: cut(900, 'gzip') } })]), 1000) as string
    expect(decoded).toBe(
      '1 body was cut at the body limit (1000 bytes): GET /items/:id (1 response). Replay breaks them off and fails unless --allow-truncated; record with --body-limit 1001 or more (compressed bodies are stored decoded, so larger than on the wire) to keep them whole.',
    )
  })
})
