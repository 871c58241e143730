import { describe, expect, it } from 'vitest'
import { createLiteralScrubber, literalVariants } from './literal-secrets.js'

describe('literal secrets', () => {
  it('lists the raw, URL-encoded, form-encoded and JSON-escaped forms once each', () => {
    expect(literalVariants('a b/"c"')).toEqual(['a b/"c"', 'a%20b%2F%22c%22', 'a+b%2F%22c%22', 'a%20b%2f%22c%22', 'a b/\\"c\\"', 'a b\\/\\"c\\"'])
    expect(literalVariants('plain')).toEqual(['plain'])
  })

  it('replaces every occurrence, longest literal first', () => {
    const scrub = createLiteralScrubber(['ab', 'abab', 'b'])
    expect(scrub('ababab b')).toBe('[REDACTED][REDACTED] [REDACTED]')
  })

  it('does nothing without literals', () => {
    expect(createLiteralScrubber([])('anything')).toBe('anything')
  })
})
