import { describe, expect, it } from 'vitest'
import { REDACTED, defaultRedactor as redactor } from './index.js'

// An obviously fake authorization code (RFC 6749's example shape: 22 characters, mixed case).
const CODE = 'Splx' + 'lOBeZQQYbYS6WxSbIA'
const VERIFIER = 'dBjf' + 'tJeZ4CVPmB92K27uhbUJU1p1r_wW1gFWFOEjXk'

describe('OAuth authorization codes and PKCE verifiers', () => {
  it('redacts the code of an authorization redirect (Location, query and fragment) and of the callback request', () => {
    expect(redactor.headers({ Location: `https://app.example/cb?code=${CODE}&state=xyz` })).toEqual({ Location: `https://app.example/cb?code=${REDACTED}&state=xyz` })
    expect(redactor.url(`https://app.example/cb#code=${CODE}&state=xyz`)).toBe(`https://app.example/cb#code=${REDACTED}&state=xyz`)
    expect(redactor.url(`/cb?code=${CODE}&state=xyz&iss=https%3A%2F%2Fauth.example`)).toBe(`/cb?code=${REDACTED}&state=xyz&iss=https%3A%2F%2Fauth.example`)
    // A callback without state: the code alone, by its length and shape.
    expect(redactor.url(`/cb?code=${CODE}`)).toBe(`/cb?code=${REDACTED}`)
  })

  it('redacts the code and the verifier of a token request, as a form body and as JSON', () => {
    expect(redactor.body(`grant_type=authorization_code&code=${CODE}&redirect_uri=https%3A%2F%2Fapp.example%2Fcb&code_verifier=${VERIFIER}&client_id=c1`, 'application/x-www-form-urlencoded')).toBe(
      `grant_type=authorization_code&code=${REDACTED}&redirect_uri=https%3A%2F%2Fapp.example%2Fcb&code_verifier=${REDACTED}&client_id=c1`,
    )
    expect(JSON.parse(redactor.body(JSON.stringify({ grant_type: 'authorization_code', code: CODE, code_verifier: VERIFIER, client_id: 'c1' }), 'application/json'))).toEqual({
      grant_type: 'authorization_code',
      code: REDACTED,
      code_verifier: REDACTED,
      client_id: 'c1',
    })
    expect(redactor.body(`grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Adevice_code&device_code=GmRh${'mqlnY1d9e0'}&client_id=c1`, 'application/x-www-form-urlencoded')).toContain(`device_code=${REDACTED}`)
  })

  it('redacts a redirect URL echoed in free text and in a JSON string', () => {
    expect(redactor.text(`302 to https://app.example/cb?code=${CODE}&state=xyz done`)).toBe(`302 to https://app.example/cb?code=${REDACTED}&state=xyz done`)
    expect(redactor.body(JSON.stringify({ redirect: `https://app.example/cb?state=xyz&code=${CODE}` }), 'application/json')).toBe(JSON.stringify({ redirect: `https://app.example/cb?state=xyz&code=${REDACTED}` }))
    expect(redactor.text(`code=${CODE}&state=xyz`)).toBe(`code=${REDACTED}&state=xyz`)
  })

  it.each([
    ['a country code beside a state', '/geo?code=US&state=CA'],
    ['a short promo code', '/checkout?code=SUMMER24'],
    ['an error code in a log line', 'request failed: error code=404 state=retrying'],
    ['an all-lowercase slug of 20+ characters', '/docs?code=getting-started-with-oauth'],
  ])('leaves %s alone', (_, text) => {
    expect(redactor.url(text)).toBe(text)
    expect(redactor.text(text)).toBe(text)
  })

  it('leaves a JSON code that is not a token request alone: error codes, and code a tool runs', () => {
    const body = JSON.stringify({ error: { code: 'ERR_RATE_LIMITED_BY_UPSTREAM', state: 'open' }, tool: { name: 'python', code: 'print(sum(range(10)))' } })
    expect(redactor.body(body, 'application/json')).toBe(body)
  })
})
