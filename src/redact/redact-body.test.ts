import { describe, expect, it } from 'vitest'
import { REDACTED, RedactionCollisionError, createRedactor, defaultRedactor } from './index.js'

const body = (text: string, contentType: string | undefined): string => defaultRedactor.body(text, contentType)
const token = (): string => 'gh' + 'p_' + 'A1b2C3d4'.repeat(5).slice(0, 36)

describe('body redaction', () => {
  it('returns a JSON body without secrets byte for byte', () => {
    const text = '{ "a": 1.0, "big": 12345678901234567890, "list": [ "x" ] }'
    expect(body(text, 'application/json')).toBe(text)
  })

  it('re-serialises a JSON body compactly once something was redacted', () => {
    expect(body('{ "password": "hunter2", "n": 1 }', 'application/json; charset=utf-8')).toBe('{"password":"[REDACTED]","n":1}')
  })

  it('treats +json media types as JSON', () => {
    expect(body('{"credentials":{"user":"u","pass":"p"}}', 'application/vnd.api+json')).toBe('{"credentials":"[REDACTED]"}')
  })

  it('falls back to text when a JSON body does not parse', () => {
    expect(body(`{"password":"hunter2", broken ${token()}`, 'application/json')).toBe(`{"password":"${REDACTED}", broken ${REDACTED}`)
  })

  it('reads JSON text in strings as JSON, up to 8 strings deep', () => {
    // A model request whose tool result holds a tool's answer that echoes the body it sent.
    let text = JSON.stringify({ password: 'hunter2', credentials: { user: 'u', pass: 'p' } })
    for (let depth = 0; depth < 8; depth++) text = JSON.stringify({ [`level${depth}`]: text })
    const out = body(text, 'application/json')
    expect(out).not.toContain('hunter2')
    expect(out).not.toMatch(/"pass\W+p\W/)
    let inner: unknown = JSON.parse(out)
    for (let depth = 7; depth >= 0; depth--) inner = JSON.parse((inner as Record<string, string>)[`level${depth}`] as string)
    expect(inner).toEqual({ password: REDACTED, credentials: REDACTED })
  })

  it('scans a JSON body that names a member twice as text, keeping both members', () => {
    const text = `{"a":1,"a":2,"token":"t-1","note":"${token()}"}`
    expect(body(text, 'application/json')).toBe(`{"a":1,"a":2,"token":"${REDACTED}","note":"${REDACTED}"}`)
    // In a string, the same: the first member's value is scanned too.
    expect(body(JSON.stringify({ raw: `{"note":"${token()}","note":"x"}` }), 'application/json')).not.toContain(token())
  })

  it('falls back to text when JSON nests deeper than the stack', () => {
    const deep = '['.repeat(200_000) + `"${token()}"` + ']'.repeat(200_000)
    const out = body(deep, 'application/json')
    expect(out).not.toContain(token())
    expect(out.length).toBeLessThan(deep.length)
  })

  it('lets a key collision in a JSON body surface as RedactionCollisionError', () => {
    expect(() => createRedactor({ secrets: ['one', 'two'] }).body('{"one":1,"two":2}', 'application/json')).toThrow(RedactionCollisionError)
  })

  it('redacts NDJSON line by line', () => {
    expect(body(`{"token":"a"}\n\n{"note":"${token()}"}\nnot json ${token()}\n`, 'application/x-ndjson')).toBe(
      `{"token":"${REDACTED}"}\n\n{"note":"${REDACTED}"}\nnot json ${REDACTED}\n`,
    )
  })

  it('redacts secret-named form fields and scans the others', () => {
    expect(body(`grant_type=password&username=bob&password=hunter%32&client_secret=x&note=${encodeURIComponent(token())}`, 'application/x-www-form-urlencoded')).toBe(
      `grant_type=password&username=bob&password=${REDACTED}&client_secret=${REDACTED}&note=${REDACTED}`,
    )
  })

  it('returns a form body without secrets byte for byte', () => {
    const text = 'a=1&b=hello+world&c=caf%C3%A9&d'
    expect(body(text, 'application/x-www-form-urlencoded')).toBe(text)
  })

  it('redacts JSON in SSE data lines and keeps the framing', () => {
    const stream = `event: message_start\r\ndata: {"type":"x","session_token":"abc"}\r\n\r\n: ping\r\ndata: [DONE]\r\n\r\n`
    expect(body(stream, 'text/event-stream')).toBe(
      `event: message_start\r\ndata: {"type":"x","session_token":"${REDACTED}"}\r\n\r\n: ping\r\ndata: [DONE]\r\n\r\n`,
    )
  })

  it('returns an SSE stream without secrets byte for byte', () => {
    const stream = 'data: {"delta": {"text": "hi"}}\n\ndata:{"usage":{"output_tokens":5}}\n\nid: 7\nretry: 100\n\n'
    expect(body(stream, 'text/event-stream')).toBe(stream)
  })

  it('joins multi-line SSE data before scanning it', () => {
    const key = `-----BEGIN PRIVATE KEY-----\n${'A1b2C3d4'.repeat(8)}\n${'A1b2C3d4'.repeat(4)}\n-----END PRIVATE KEY-----`
    const stream = `${key.split('\n').map((line) => `data: ${line}`).join('\n')}\n\n`
    expect(body(stream, 'text/event-stream')).toBe(`data: ${REDACTED}\n\n`)
  })

  it('redacts a JSON document spread over several SSE data lines by key', () => {
    expect(body('data: {"api_key":\ndata: "abc"}\n\n', 'text/event-stream')).toBe(`data: {"api_key":"${REDACTED}"}\n\n`)
  })

  it('redacts secret-named multipart fields and scans the others', () => {
    const text = [
      '--XyZ',
      'Content-Disposition: form-data; name="password"',
      '',
      'hunter2',
      '--XyZ',
      'Content-Disposition: form-data; name="meta"',
      'Content-Type: application/json',
      '',
      '{"token":"abc","n":1}',
      '--XyZ',
      'Content-Disposition: form-data; name="file"; filename="notes.txt"',
      '',
      `see ${token()}`,
      '--XyZ--',
      '',
    ].join('\r\n')
    expect(body(text, 'multipart/form-data; boundary="XyZ"')).toBe(
      text.replace('hunter2', REDACTED).replace('{"token":"abc","n":1}', `{"token":"${REDACTED}","n":1}`).replace(token(), REDACTED),
    )
  })

  it.each([undefined, 'text/plain', 'text/html', 'application/xml', 'application/octet-stream'])('scans a %s body as text', (contentType) => {
    expect(body(`<p>password=hunter2 ${token()}</p>`, contentType)).toBe(`<p>password=${REDACTED} ${REDACTED}</p>`)
  })
})
