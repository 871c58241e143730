import { describe, expect, it } from 'vitest'
import { encodeAroundMarkers, redactBase64Runs, redactPercentEncodedRuns, safePercentDecode } from './encoded-secrets.js'
import { REDACTED } from './redacted-marker.js'

// A stand-in scanner: only the word `hunter2` is secret.
const scrub = (text: string): string => text.replace(/hunter2/g, REDACTED)

describe('encoded secrets', () => {
  it('decodes percent-escapes and leaves malformed ones alone', () => {
    expect(safePercentDecode('a%20b%zz%')).toBe('a b%zz%')
    expect(safePercentDecode('%E9t%C3%A9')).toBe('\u00e9t\u00e9')
  })

  it('keeps markers readable when re-encoding', () => {
    expect(encodeAroundMarkers(`a b/${REDACTED}&c`)).toBe(`a%20b%2F${REDACTED}%26c`)
  })

  it('rewrites only the piece of a percent-encoded run that held the secret', () => {
    expect(redactPercentEncodedRuns('go /cb?x=1&note=pw%3Dhunter2&y=2 now', scrub)).toBe(`go /cb?x=1&note=pw%3D${REDACTED}&y=2 now`)
  })

  it('replaces a whole percent-encoded run when the secret spans its delimiters', () => {
    expect(redactPercentEncodedRuns('x=hun%74er/2', (t) => t.replace('hunter/2', REDACTED))).toBe(REDACTED)
  })

  it('leaves runs without escapes or without secrets alone', () => {
    const text = 'a=hunter2 b=caf%C3%A9'
    expect(redactPercentEncodedRuns(text, scrub)).toBe(text)
  })

  it('replaces a base64 run that decodes to text holding a secret', () => {
    const blob = Buffer.from('user=bob pass=hunter2').toString('base64')
    expect(redactBase64Runs(`data ${blob} end`, scrub)).toBe(`data ${REDACTED} end`)
    const urlSafe = Buffer.from('??>>hunter2??>>hunter2').toString('base64url')
    expect(redactBase64Runs(urlSafe, scrub)).toBe(REDACTED)
  })

  it('skips base64 runs that decode to binary', () => {
    const binary = Buffer.concat([Buffer.from([0, 1, 2, 250, 251, 252, 3, 4, 5, 6, 7, 8]), Buffer.from('hunter2')]).toString('base64')
    expect(redactBase64Runs(binary, scrub)).toBe(binary)
  })

  it('decodes a base64 run glued to base64-alphabet text before it, at any offset', () => {
    const encoded = Buffer.from('user=agent password hunter2 end').toString('base64')
    for (const glue of ['a', 'ab', 'abc', 'abcd', 'session_', 'v1-x']) {
      expect(redactBase64Runs(`blob=${glue}${encoded} done`, scrub)).toBe(`blob=${REDACTED} done`)
    }
  })

  it('leaves glued base64 of random bytes and of clean text alone', () => {
    for (const glue of ['', 'a', 'ab', 'abc']) {
      const clean = `${glue}${Buffer.from('an ordinary sentence of plain text').toString('base64')}`
      expect(redactBase64Runs(clean, scrub)).toBe(clean)
      const random = `${glue}${Buffer.from(Array.from({ length: 96 }, (_, i) => (i * 73 + 41) % 256)).toString('base64')}`
      expect(redactBase64Runs(random, scrub)).toBe(random)
    }
  })
})
