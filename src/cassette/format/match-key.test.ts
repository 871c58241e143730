import { describe, expect, it } from 'vitest'
import { bodyDigest, describeDifference, matchView, normaliseQuery, splitUrl } from './match-key.js'
import { defaultMatchOptions } from './cassette-schema.js'

const OPTIONS = defaultMatchOptions()
const json = (data: string) => ({ encoding: 'utf8' as const, data, size: data.length, truncated: false })

describe('match keys', () => {
  it('sorts query parameters by name and keeps the order of repeated names', () => {
    expect(normaliseQuery('b=2&a=1&c=3&a=0')).toBe('a=1&a=0&b=2&c=3')
  })

  it('reads + and %20 as the same space and drops ignored parameters', () => {
    expect(normaliseQuery('q=a+b&ts=123', ['ts'])).toBe(normaliseQuery('q=a%20b'))
  })

  it('splits absolute and origin-form URLs, dropping default ports and userinfo', () => {
    expect(splitUrl('HTTP://User@Example.COM:80/a?b=1')).toEqual({ origin: 'http://example.com', path: '/a', query: 'b=1' })
    expect(splitUrl('/a/b?c')).toEqual({ origin: null, path: '/a/b', query: 'c' })
    expect(splitUrl('https://example.com')).toEqual({ origin: 'https://example.com', path: '/', query: '' })
  })

  it('compares JSON bodies by content, not key order or spacing', () => {
    expect(bodyDigest(json('{"a":1,"b":[1,2]}'), 'application/json')).toBe(bodyDigest(json('{ "b": [1, 2], "a": 1 }'), 'application/json; charset=utf-8'))
    expect(bodyDigest(json('{"a":1}'), 'text/plain')).not.toBe(bodyDigest(json('{ "a": 1 }'), 'text/plain'))
  })

  it('compares a JSON body that names a member twice as its bytes: it matches neither the body JSON.parse reads nor another order', () => {
    const digest = (text: string) => bodyDigest(json(text), 'application/json')
    expect(digest('{"a":1,"a":2}')).not.toBe(digest('{"a":2}'))
    expect(digest('{"a":1,"a":2}')).not.toBe(digest('{"a":2,"a":1}'))
    expect(digest('{"x":{"a":1,"a":2},"t":"12:30"}')).not.toBe(digest('{"x":{"a":2},"t":"12:30"}'))
    expect(digest('{"a":1,"\\u0061":2}')).not.toBe(digest('{"a":2}'))
    expect(digest('{"a":1,"a":2}')).toBe(digest('{"a":1,"a":2}'))
    // Colons in strings and escaped colons are no members: such bodies still compare by content.
    expect(digest('{"t":"12:30","u":"a\\u003ab","v":[{"w":"x:y"}]}')).toBe(digest('{ "v": [{"w": "x:y"}], "u": "a:b", "t": "12:30" }'))
  })

  it('compares numbers by their decimal value, past what a double holds, in JSON text inside a normalised tool result too', () => {
    const digest = (data: string) => bodyDigest(json(data), 'application/json')
    expect(digest('{"id":12345678901234567890}')).not.toBe(digest('{"id":12345678901234567891}'))
    expect(digest('{"id":12345678901234567890}')).toBe(digest('{"id":1.2345678901234567890e19}'))
    expect(digest('{"x":1.5}')).toBe(digest('{"x":1.50000000000000000000}'))
    const toolResult = (id: string) => bodyDigest(json(JSON.stringify({ messages: [{ role: 'tool', content: `{"order":${id}}` }] })), 'application/json', [], ['ids'])
    expect(toolResult('12345678901234567890')).not.toBe(toolResult('12345678901234567891'))
  })

  it('matches a body cut at the body limit only when its size and its stored prefix both match', () => {
    const cut = (data: string, size: number) => ({ method: 'POST', url: '/upload', headers: {}, body: { encoding: 'utf8' as const, data, size, truncated: true } })
    const recorded = matchView(cut('x'.repeat(100), 5000), OPTIONS)
    expect(describeDifference(recorded, matchView(cut('x'.repeat(100), 5000), OPTIONS), OPTIONS)).toBeNull()
    expect(describeDifference(recorded, matchView(cut('x'.repeat(100), 5001), OPTIONS), OPTIONS)).toBe('body differs (expected 5000 bytes, of which the cassette keeps a prefix)')
    expect(describeDifference(recorded, matchView(cut('y' + 'x'.repeat(99), 5000), OPTIONS), OPTIONS)).toBe('body differs')
    expect(describeDifference(recorded, matchView({ method: 'POST', url: '/upload', headers: {}, body: json('x'.repeat(100)) }, OPTIONS), OPTIONS)).toBe('body differs (expected 5000 bytes, of which the cassette keeps a prefix)')
  })

  it('ignores volatile JSON fields at any depth when told', () => {
    const a = bodyDigest(json('{"id":"r1","x":{"request_id":"q","v":1}}'), 'application/json', ['request_id', 'id'])
    const b = bodyDigest(json('{"id":"r2","x":{"request_id":"z","v":1}}'), 'application/json', ['request_id', 'id'])
    expect(a).toBe(b)
  })

  it('compares form bodies by their fields and drops the ignored ones (a PKCE code_verifier)', () => {
    const FORM = 'application/x-www-form-urlencoded'
    const token = (verifier: string, order: 'code first' | 'verifier first' = 'code first') =>
      json(order === 'code first' ? `grant_type=authorization_code&code=c-1&code_verifier=${verifier}&redirect_uri=http%3A%2F%2F127.0.0.1%3A1%2Fcb` : `code_verifier=${verifier}&redirect_uri=http://127.0.0.1:1/cb&code=c-1&grant_type=authorization_code`)
    expect(bodyDigest(token('a1'), FORM, ['code_verifier'])).toBe(bodyDigest(token('b2', 'verifier first'), FORM, ['code_verifier']))
    expect(bodyDigest(token('a1'), FORM)).not.toBe(bodyDigest(token('b2'), FORM))
    // Only the ignored field: another difference still counts, and a repeated field keeps its values in order.
    expect(bodyDigest(json('code=c-1&code_verifier=a1'), FORM, ['code_verifier'])).not.toBe(bodyDigest(json('code=c-2&code_verifier=a1'), FORM, ['code_verifier']))
    expect(bodyDigest(json('scope=a&scope=b'), FORM)).not.toBe(bodyDigest(json('scope=b&scope=a'), FORM))
    // Not a form: compared byte for byte as before.
    expect(bodyDigest(token('a1'), 'text/plain', ['code_verifier'])).not.toBe(bodyDigest(token('b2'), 'text/plain', ['code_verifier']))
  })

  it('names the first component that differs, never the body', () => {
    const expected = matchView({ method: 'POST', url: '/ship?x=1', headers: { 'content-type': 'application/json' }, body: json('{"order":"secret-order"}') }, OPTIONS)
    const body = matchView({ method: 'POST', url: '/ship?x=1', headers: { 'content-type': 'application/json' }, body: json('{"order":"other"}') }, OPTIONS)
    const query = matchView({ method: 'POST', url: '/ship?x=2', headers: {}, body: null }, OPTIONS)
    const method = matchView({ method: 'PUT', url: '/ship', headers: {}, body: null }, OPTIONS)
    expect(describeDifference(expected, body, OPTIONS)).toBe('body differs')
    expect(describeDifference(expected, query, OPTIONS)).toBe('query differs (expected ?x=1)')
    expect(describeDifference(expected, method, OPTIONS)).toBe('method differs (expected POST)')
    expect(describeDifference(expected, expected, OPTIONS)).toBeNull()
  })

  it('compares origins only when both sides name one', () => {
    const recorded = matchView({ method: 'GET', url: 'http://api.test/a', headers: {}, body: null }, OPTIONS)
    expect(describeDifference(recorded, matchView({ method: 'GET', url: '/a', headers: {}, body: null }, OPTIONS), OPTIONS)).toBeNull()
    expect(describeDifference(recorded, matchView({ method: 'GET', url: 'http://other.test/a', headers: {}, body: null }, OPTIONS), OPTIONS)).toBe('origin differs (expected http://api.test)')
  })

  it('matches any body when the recording never read it', () => {
    const recorded = matchView({ method: 'POST', url: '/ship', headers: {}, body: null, bodyUnknown: true }, OPTIONS)
    const seen = matchView({ method: 'POST', url: '/ship', headers: {}, body: json('{"a":1}') }, OPTIONS)
    expect(describeDifference(recorded, seen, OPTIONS)).toBeNull()
    expect(recorded.key).toBe(seen.looseKey)
  })

  it('compares chosen headers by their redacted values', () => {
    const options = { ...OPTIONS, headers: ['x-tenant'] }
    const a = matchView({ method: 'GET', url: '/', headers: { 'x-tenant': 'a' }, body: null }, options)
    const b = matchView({ method: 'GET', url: '/', headers: { 'x-tenant': 'b' }, body: null }, options)
    expect(describeDifference(a, b, options)).toBe('header x-tenant differs')
  })
})
