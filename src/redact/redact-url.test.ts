import { describe, expect, it } from 'vitest'
import { REDACTED, createRedactor, defaultRedactor } from './index.js'

const url = (u: string): string => defaultRedactor.url(u)
const token = (): string => 'gh' + 'p_' + 'A1b2C3d4'.repeat(5).slice(0, 36)

describe('url redaction', () => {
  it('returns a URL without secrets byte for byte', () => {
    const plain = 'HTTPS://API.Example.com:8443/v1/a%2Fb/c?q=caf%C3%A9&x=1+2&max_tokens=5#frag'
    expect(url(plain)).toBe(plain)
  })

  it('replaces userinfo with a password, username included', () => {
    expect(url('https://agent:hunter2@api.example.com/v1')).toBe(`https://${REDACTED}@api.example.com/v1`)
    expect(url('postgres://app:p%40ss@db:5432/main?sslmode=require')).toBe(`postgres://${REDACTED}@db:5432/main?sslmode=require`)
  })

  it('keeps a plain username and replaces a token-shaped one', () => {
    expect(url('ssh://git@github.com/org/repo.git')).toBe('ssh://git@github.com/org/repo.git')
    expect(url(`https://${token()}@github.com/org/repo.git`)).toBe(`https://${REDACTED}@github.com/org/repo.git`)
  })

  it('replaces the values of secret-named query parameters', () => {
    expect(url('/v1/files?access_token=abc&X-Amz-Signature=def&X-Amz-Credential=AK%2F1&page=2&key=plain')).toBe(
      `/v1/files?access_token=${REDACTED}&X-Amz-Signature=${REDACTED}&X-Amz-Credential=${REDACTED}&page=2&key=plain`,
    )
  })

  it('decodes percent-encoded parameter names before judging them', () => {
    expect(url('/x?api%5Fkey=abc&pass%77ord=def')).toBe(`/x?api%5Fkey=${REDACTED}&pass%77ord=${REDACTED}`)
  })

  it('replaces a credential inside an encoded query value and re-encodes the rest', () => {
    expect(url(`/search?q=${encodeURIComponent(`find ${token()} now`)}&page=2`)).toBe(`/search?q=find%20${REDACTED}%20now&page=2`)
  })

  it('catches a token whose base64 characters were left unencoded in the query', () => {
    const basic = Buffer.from('agent:c0rrect+horse/battery?').toString('base64')
    const out = url(`/x?h=Basic ${basic}`)
    expect(out).not.toContain(basic)
    expect(out).toContain(REDACTED)
  })

  it('replaces a credential in a path segment', () => {
    expect(url(`https://api.telegram.org/bot1234567890:AA${'A1b2C3d4'.repeat(5).slice(0, 33)}/sendMessage`)).toBe(
      `https://api.telegram.org/bot${REDACTED}/sendMessage`,
    )
  })

  it('redacts the path of a Slack webhook after its host', () => {
    expect(url(`https://hooks.slack.com/services/T0000/B0000/${'A1b2C3d4'.repeat(3)}`)).toBe(`https://hooks.slack.com/services/${REDACTED}`)
  })

  it('treats a fragment with parameters like a query (OAuth implicit flow)', () => {
    expect(url('https://app.example.com/cb#access_token=abc&token_type=bearer&state=s')).toBe(
      `https://app.example.com/cb#access_token=${REDACTED}&token_type=bearer&state=s`,
    )
  })

  it('replaces literal secrets in every component', () => {
    const redactor = createRedactor({ secrets: ['s3cr3t value'] })
    expect(redactor.url('https://h/p/s3cr3t%20value?s3cr3t+value=1&q=s3cr3t%20value')).toBe(
      `https://h/p/${REDACTED}?${REDACTED}=1&q=${REDACTED}`,
    )
  })

  it.each([
    'https://u:p@h.example/x?token=1&q=2#access_token=3',
    `/v1/${token()}?q=${encodeURIComponent(token())}`,
    'mongodb+srv://u:p@cluster0.example.net/db?retryWrites=true',
    '?password=1',
  ])('keeps %s parseable after redaction', (input) => {
    expect(() => new URL(url(input), 'http://base.example')).not.toThrow()
  })
})
