import { describe, expect, it } from 'vitest'
import { createSecretNameMatcher } from './secret-names.js'
import { redactSecretAssignments } from './secret-assignments.js'
import { REDACTED } from './redacted-marker.js'

const redact = (text: string): string => redactSecretAssignments(text, createSecretNameMatcher())

describe('secret assignments', () => {
  it.each([
    ['password=hunter2', 'password=[REDACTED]'],
    ['passwd=hunter2&user=bob', 'passwd=[REDACTED]&user=bob'],
    ['pwd=hunter2;', 'pwd=[REDACTED];'],
    ['secret = hunter2, user = bob', 'secret = [REDACTED], user = bob'],
    ['token=abc123 rest', 'token=[REDACTED] rest'],
    ['api_key=abc123', 'api_key=[REDACTED]'],
    ['OPENAI_API_KEY=abc123', 'OPENAI_API_KEY=[REDACTED]'],
    ['password: hunter2', 'password: [REDACTED]'],
    ['"password":"hun\\"ter2","user":"bob"', '"password":"[REDACTED]","user":"bob"'],
    ["{'password': 'hunter2', 'user': 'bob'}", "{'password': '[REDACTED]', 'user': 'bob'}"],
    ['--password=hunter2 --user=bob', '--password=[REDACTED] --user=bob'],
    ['password="hunter2', 'password=[REDACTED]'],
    ['client.secret=abc', 'client.secret=[REDACTED]'],
    ['X-Api-Key: abc123', 'X-Api-Key: [REDACTED]'],
  ])('redacts the value in %s', (text, expected) => {
    expect(redact(text)).toBe(expected)
  })

  it('quotes the marker after a quoted name so JSON text stays valid', () => {
    const out = redact('{"token":null,"password":12345,"n":1}')
    expect(out).toBe('{"token":"[REDACTED]","password":"[REDACTED]","n":1}')
    expect(() => JSON.parse(out)).not.toThrow()
  })

  it('keeps the scheme word together with its credential', () => {
    expect(redact('authorization=Bearer abc123')).toBe('authorization=[REDACTED]')
  })

  it('redacts whole header lines for Authorization, Proxy-Authorization, Cookie and Set-Cookie', () => {
    const text = 'Authorization: Bearer abc\r\nProxy-Authorization: Basic xyz\r\nCookie: a=1; b=2\r\nSet-Cookie: sid=9; Path=/\r\nAccept: */*'
    expect(redact(text)).toBe(
      'Authorization: [REDACTED]\r\nProxy-Authorization: [REDACTED]\r\nCookie: [REDACTED]\r\nSet-Cookie: [REDACTED]\r\nAccept: */*',
    )
  })

  it('stops a header line at a quote, so a quoted header does not swallow the rest', () => {
    expect(redact('{"h":"Cookie: a=1","next":"kept"}')).toBe('{"h":"Cookie: [REDACTED]","next":"kept"}')
  })

  it('finds an assignment inside the value of an ordinary name', () => {
    expect(redact('{"note":"password=hunter2"}')).toBe('{"note":"password=[REDACTED]"}')
  })

  it('redacts secret-named XML elements', () => {
    expect(redact('<user>bob</user><password>hunter2</password>')).toBe('<user>bob</user><password>[REDACTED]</password>')
  })

  it.each([
    'key=value',
    'idempotency_key=abc',
    'max_tokens=100',
    'author: ann',
    'https://example.com:8080/x',
    'time: 10:00:00',
  ])('leaves %s alone', (text) => {
    expect(redact(text)).toBe(text)
  })

  it('is idempotent', () => {
    const once = redact('password=hunter2 "token":"abc" Cookie: a=1')
    expect(redact(once)).toBe(once)
  })
})

describe('form and multipart text inside other text', () => {
  it('redacts form names with brackets (user[password]=, password[]=)', () => {
    expect(redact('user=a&user[password]=hunter2&x=1')).toBe('user=a&user[password]=[REDACTED]&x=1')
    expect(redact('password[]=hunter2&password[]=hunter3')).toBe('password[]=[REDACTED]&password[]=[REDACTED]')
  })

  it('redacts a secret-named multipart part, with real or JSON-escaped line breaks, and keeps the others', () => {
    const part = (name: string, value: string, eol: string): string => `--b${eol}Content-Disposition: form-data; name="${name}"${eol}Content-Type: text/plain${eol}${eol}${value}${eol}`
    const form = (eol: string): string => `${part('user', 'agent', eol)}${part('password', 'hunter2 with "quotes"', eol)}--b--${eol}`
    expect(redact(form('\r\n'))).toBe(form('\r\n').replace('hunter2 with "quotes"', REDACTED))
    const escaped = JSON.stringify({ raw: form('\r\n') })
    expect(redact(escaped)).toBe(escaped.replace('hunter2 with \\"quotes\\"', REDACTED))
    expect(redact(escaped)).toContain('agent')
  })

  it('redacts a value in JSON-escaped JSON text (a JSON body that did not parse)', () => {
    expect(redact('{"raw":"{\\"password\\":\\"hunter2\\",\\"user\\":\\"bob\\"}"')).toBe('{"raw":"{\\"password\\":\\"[REDACTED]\\",\\"user\\":\\"bob\\"}"')
    expect(redact('{"raw":"a=1&password=\\"hunter2\\""}')).toBe('{"raw":"a=1&password=\\"[REDACTED]\\""}')
  })
})
