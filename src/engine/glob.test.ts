import { describe, expect, it } from 'vitest'
import { globMatches } from './glob.js'

describe('glob', () => {
  it('matches whole names case-sensitively', () => {
    expect(globMatches('create_shipment', 'create_shipment')).toBe(true)
    expect(globMatches('create_shipment', 'Create_shipment')).toBe(false)
    expect(globMatches('create', 'create_shipment')).toBe(false)
  })

  it('lets "*" cross slashes and dots', () => {
    expect(globMatches('GET /inventory/*', 'GET /inventory/CLOUD-01')).toBe(true)
    expect(globMatches('GET /inventory/*', 'GET /inventory/a/b.c')).toBe(true)
    expect(globMatches('* /v1/*', 'POST /v1/chat/completions')).toBe(true)
  })

  it('supports "?", classes and negated classes', () => {
    expect(globMatches('tool-?', 'tool-a')).toBe(true)
    expect(globMatches('tool-?', 'tool-ab')).toBe(false)
    expect(globMatches('tool-[ab]', 'tool-b')).toBe(true)
    expect(globMatches('tool-[!ab]', 'tool-b')).toBe(false)
    expect(globMatches('tool-[!ab]', 'tool-c')).toBe(true)
    expect(globMatches('x[]]', 'x]')).toBe(true)
  })

  it('treats regex metacharacters literally', () => {
    expect(globMatches('a.b(c)+', 'a.b(c)+')).toBe(true)
    expect(globMatches('a.b', 'axb')).toBe(false)
  })
})
