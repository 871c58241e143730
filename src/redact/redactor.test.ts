import { describe, expect, it } from 'vitest'
import { ConfigError, ToolstormError } from '../errors.js'
import { REDACTED, RedactionCollisionError, createRedactor, defaultRedactor, type JsonValue } from './index.js'

const fakeGithubToken = (): string => 'gh' + 'p_' + 'A1b2C3d4'.repeat(5).slice(0, 36)

describe('redactor', () => {
  it('redacts headers and values without mutating the input (spec §13 item 17)', () => {
    const redactor = createRedactor({ secrets: ['abc'] })
    const source: JsonValue = {
      Authorization: 'Bearer x',
      'set-cookie': ['a=1', 'b=2'],
      nested: [{ 'Api-Key': { deep: 'value' } }, 'prefix abc suffix', { nonsecret: 'safe' }],
    }
    const snapshot = structuredClone(source)
    expect(redactor.json(source)).toEqual({
      Authorization: REDACTED,
      'set-cookie': REDACTED,
      nested: [{ 'Api-Key': REDACTED }, 'prefix [REDACTED] suffix', { nonsecret: 'safe' }],
    })
    expect(source).toEqual(snapshot)
  })

  it('throws RedactionCollisionError when two keys redact to the same key (spec §13 item 24)', () => {
    const redactor = createRedactor({ secrets: ['a-secret', 'b-secret'] })
    expect(() => redactor.json({ 'a-secret': 1, 'b-secret': 2 })).toThrow(RedactionCollisionError)
    expect(() => redactor.json({ 'a-secret': 1, 'b-secret': 2 })).toThrow('Failed to redact a JSON object: redaction creates ambiguous dictionary keys')
  })

  it('makes RedactionCollisionError a ConfigError with a stable code', () => {
    const error = new RedactionCollisionError(REDACTED)
    expect(error).toBeInstanceOf(ConfigError)
    expect(error).toBeInstanceOf(ToolstormError)
    expect(error.code).toBe('ERR_CONFIG_INVALID')
    expect(error.key).toBe(REDACTED)
    expect(new ConfigError('other')).not.toBeInstanceOf(RedactionCollisionError)
  })

  it('never writes a literal secret found in a key nested in a list (spec §13 item 29)', () => {
    const redactor = createRedactor({ secrets: ['HUNTER-TWO'] })
    const out = redactor.json({ result: [[{ 'id-HUNTER-TWO-1': { 'HUNTER-TWO': 'x' } }]] })
    expect(JSON.stringify(out)).not.toContain('HUNTER-TWO')
    expect(out).toEqual({ result: [[{ 'id-[REDACTED]-1': { [REDACTED]: 'x' } }]] })
  })

  it('replaces the value of a secret-named key whatever its type', () => {
    expect(defaultRedactor.json({ token: 7, password: null, api_key: [1, 2], credentials: { user: 'u' }, secret: false })).toEqual({
      token: REDACTED,
      password: REDACTED,
      api_key: REDACTED,
      credentials: REDACTED,
      secret: REDACTED,
    })
  })

  it('leaves numbers, booleans and null untouched, even when they spell a literal secret', () => {
    const redactor = createRedactor({ secrets: ['42', 'true'] })
    expect(redactor.json({ a: 42, b: true, c: null, d: '42' })).toEqual({ a: 42, b: true, c: null, d: REDACTED })
  })

  it('scrubs credential shapes inside object keys', () => {
    const token = fakeGithubToken()
    expect(defaultRedactor.json({ [`cache:${token}`]: 1 })).toEqual({ [`cache:${REDACTED}`]: 1 })
  })

  it('keeps a __proto__ key as a plain own key', () => {
    const source = JSON.parse('{"__proto__":{"password":"x"},"a":1}') as JsonValue
    const out = defaultRedactor.json(source) as Record<string, unknown>
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype)
    expect(Object.keys(out)).toEqual(['__proto__', 'a'])
    expect(JSON.stringify(out)).toBe('{"__proto__":{"password":"[REDACTED]"},"a":1}')
  })

  it('replaces literal secrets longest first', () => {
    const redactor = createRedactor({ secrets: ['abc', 'abcdef'] })
    expect(redactor.text('xabcdefx abc')).toBe('x[REDACTED]x [REDACTED]')
  })

  it('never corrupts an existing marker with a literal secret', () => {
    const redactor = createRedactor({ secrets: ['RED', 'hunter2'] })
    expect(redactor.text('hunter2 RED')).toBe('[REDACTED] [REDACTED]')
    expect(redactor.text('[REDACTED]')).toBe('[REDACTED]')
  })

  it('replaces the URL-encoded and JSON-escaped forms of a literal secret', () => {
    const redactor = createRedactor({ secrets: ['p@ss word/"x"'] })
    expect(redactor.text(`q=${encodeURIComponent('p@ss word/"x"')}`)).toBe(`q=${REDACTED}`)
    expect(redactor.text(JSON.stringify({ v: 'p@ss word/"x"' }))).toBe(`{"v":"${REDACTED}"}`)
  })

  it('replaces a literal secret hidden in base64', () => {
    const redactor = createRedactor({ secrets: ['correct horse battery'] })
    const blob = Buffer.from('{"user":"bob","pass":"correct horse battery"}').toString('base64')
    expect(redactor.text(`blob ${blob}`)).toBe(`blob ${REDACTED}`)
  })

  it('adds user keys to the secret names', () => {
    const redactor = createRedactor({ keys: ['tenant-pin'] })
    expect(redactor.isSecretName('TenantPin')).toBe(true)
    expect(redactor.json({ tenantPin: '1234', tenant: 't' })).toEqual({ tenantPin: REDACTED, tenant: 't' })
    expect(redactor.text('tenant_pin=1234')).toBe('tenant_pin=[REDACTED]')
  })

  it.each([
    [{ keys: [''] }],
    [{ secrets: [''] }],
    [{ secrets: [42 as unknown as string] }],
    [{ keys: 'password' as unknown as string[] }],
  ])('refuses invalid options %j', (options) => {
    expect(() => createRedactor(options)).toThrow(new ConfigError('Failed to create a redactor: redaction keys and secrets must be nonempty strings.'))
  })

  it('redacts whole values of secret headers and keeps the case of names', () => {
    const token = fakeGithubToken()
    expect(
      defaultRedactor.headers({
        Authorization: `Bearer ${token}`,
        'Set-Cookie': ['a=1', 'b=2', 'c=3'],
        'X-Api-Key': 'k',
        'X-Toolstorm-Key': 'run-1:call-2',
        'x-toolstorm-run': 'r1',
        'Content-Type': 'application/json',
        'X-Note': `saw ${token}`,
        'X-Missing': undefined,
      }),
    ).toEqual({
      Authorization: REDACTED,
      'Set-Cookie': [REDACTED, REDACTED, REDACTED],
      'X-Api-Key': REDACTED,
      'X-Toolstorm-Key': 'run-1:call-2',
      'x-toolstorm-run': 'r1',
      'Content-Type': 'application/json',
      'X-Note': `saw ${REDACTED}`,
    })
  })

  it('redacts a token in the query of a Location header', () => {
    expect(defaultRedactor.headers({ Location: 'https://app.example.com/cb?code=1&access_token=abc#x' })).toEqual({
      Location: `https://app.example.com/cb?code=1&access_token=${REDACTED}#x`,
    })
  })

  it('reports whether a value contains a secret', () => {
    expect(defaultRedactor.containsSecret(`key ${fakeGithubToken()}`)).toBe(true)
    expect(defaultRedactor.containsSecret('password=hunter2')).toBe(true)
    expect(defaultRedactor.containsSecret('nothing to see here')).toBe(false)
    expect(createRedactor({ secrets: ['hunter2'] }).containsSecret('is hunter2')).toBe(true)
  })

  it('masks credential shapes and literal secrets in binary data byte for byte, and leaves assignment-like bytes alone', () => {
    const redactor = createRedactor({ secrets: ['hunter2'] })
    const token = fakeGithubToken()
    const basic = Buffer.from(`Authorization: Bearer ${token}`).toString('base64')
    const binary = `\u0000\u00ff${token}\u0001hunter2\u0002${basic}\u0003~S.PWD:Wp!\u00fa`
    const masked = redactor.binary(binary)
    expect(masked).toBe(`\u0000\u00ff${REDACTED}${'*'.repeat(token.length - 10)}\u0001*******\u0002${REDACTED}${'*'.repeat(basic.length - 10)}\u0003~S.PWD:Wp!\u00fa`)
    expect(masked.length).toBe(binary.length)
    expect(redactor.binary(masked)).toBe(masked)
  })

  it('is idempotent on text, JSON, URLs and bodies', () => {
    const redactor = createRedactor({ secrets: ['hunter2'] })
    const text = `Authorization: Bearer ${fakeGithubToken()}\npassword=hunter2 postgres://u:p4ss@h/db`
    const once = redactor.text(text)
    expect(redactor.text(once)).toBe(once)
    const json = redactor.json({ token: 'x', note: `see ${fakeGithubToken()}`, hunter2: 1 })
    expect(redactor.json(json)).toEqual(json)
    const url = redactor.url(`https://u:p@h/x?token=1&q=${fakeGithubToken()}`)
    expect(redactor.url(url)).toBe(url)
    const body = redactor.body(`{"password":"hunter2","n":1.50}`, 'application/json')
    expect(redactor.body(body, 'application/json')).toBe(body)
  })

  it('redacts 1 MiB of ordinary text well under a second', () => {
    const words = ['the', 'agent', 'called', 'create_shipment', 'for', 'order', '42', 'at', '2024-05-01T10:00:00Z', 'status:', 'ok;', 'see', 'https://api.example.com/v1/orders?page=2', 'internationalization', 'user@example.com', '100%', 'key=value', 'tokens']
    let text = ''
    for (let i = 0; text.length < 1 << 20; i++) text += words[(i * 7919) % words.length] + (i % 17 === 0 ? '\n' : ' ')
    const redactor = createRedactor({ secrets: ['hunter2'] })
    const started = performance.now()
    expect(redactor.text(text)).toBe(text)
    expect(performance.now() - started).toBeLessThan(2000)
  })

  it.each([
    ['BEGIN lines without END', '-----BEGIN PRIVATE KEY-----'.repeat(40_000)],
    ['unterminated quoted values', 'token:"'.repeat(150_000)],
    ['URL schemes without hosts', 'a://'.repeat(250_000)],
    ['dash-separated words', 'a-'.repeat(500_000)],
    ['sk- prefixes', 'sk-'.repeat(350_000)],
    ['percent-encoded words', 'a%20b '.repeat(170_000)],
    ['one long base64 run', Buffer.from('x'.repeat(780_000)).toString('base64')],
    ['long names before colons', `${'x'.repeat(63)}:`.repeat(16_000)],
    ['scheme words before runs of dots', `Bearer ${'.'.repeat(4000)}x `.repeat(250)],
  ])('redacts 1 MiB of %s without catastrophic backtracking', (_, text) => {
    const started = performance.now()
    defaultRedactor.text(text)
    expect(performance.now() - started).toBeLessThan(2000)
  })
})
