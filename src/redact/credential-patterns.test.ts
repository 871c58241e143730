import { describe, expect, it } from 'vitest'
import { CREDENTIAL_PATTERNS, isTokenLike, redactCredentialShapes } from './credential-patterns.js'
import { redactPrivateKeyBlocks } from './private-key-blocks.js'

// Obviously fake bodies built in code; the corpus test covers crypto-random ones.
const body = (length: number): string => 'A1b2C3d4'.repeat(Math.ceil(length / 8)).slice(0, length)
const pemBlock = (label: string): string => `-----BEGIN ${label}-----\n${body(64)}\n${body(40)}==\n-----END ${label}-----`

describe('credential patterns', () => {
  it('gives every pattern a unique id, a description and a global regex', () => {
    const ids = CREDENTIAL_PATTERNS.map((p) => p.id)
    expect(new Set(ids).size).toBe(ids.length)
    for (const p of CREDENTIAL_PATTERNS) {
      expect(p.description.length).toBeGreaterThan(10)
      expect(p.regex.global).toBe(true)
    }
  })

  it.each([
    ['Bearer', 'Bearer '],
    ['bearer', 'bearer '],
    ['Basic', 'Basic '],
    ['Token', 'Token '],
    ['Bot', 'Bot '],
  ])('keeps the %s scheme word and replaces the credential after it', (_, prefix) => {
    expect(redactCredentialShapes(`-H "Authorization: ${prefix}${body(30)}" done`)).toBe(`-H "Authorization: ${prefix}[REDACTED]" done`)
  })

  it('replaces a JSON-escaped base64 credential whole', () => {
    expect(redactCredentialShapes(`"Basic ${body(12)}\\/${body(12)}=="`)).toBe('"Basic [REDACTED]"')
  })

  it.each([
    'Basic information about Bearer bonds and Token Management',
    'the signature is the bearer credential. The cost',
    'Basic auth-based login',
  ])('leaves a scheme word followed by an ordinary word alone: %s', (text) => {
    expect(redactCredentialShapes(text)).toBe(text)
  })

  it('tells token-like values from words', () => {
    expect(isTokenLike('abcdefgh1')).toBe(true)
    expect(isTokenLike('abcdefgh+/')).toBe(true)
    expect(isTokenLike('abcDefgh')).toBe(true)
    expect(isTokenLike('opaque.session.identifier.value')).toBe(true)
    expect(isTokenLike('information')).toBe(false)
    expect(isTokenLike('Management')).toBe(false)
    expect(isTokenLike('credential.')).toBe(false)
    expect(isTokenLike('auth-based')).toBe(false)
  })

  it.each(['postgres', 'postgresql', 'mysql', 'mongodb', 'mongodb+srv', 'redis', 'rediss', 'amqp', 'amqps', 'ftp', 'https'])(
    'replaces the userinfo of a %s URL and keeps the host',
    (scheme) => {
      expect(redactCredentialShapes(`DATABASE_URL=${scheme}://app_user:${body(14)}@db.example.com:5432/main?ssl=true`)).toBe(
        `DATABASE_URL=${scheme}://[REDACTED]@db.example.com:5432/main?ssl=true`,
      )
    },
  )

  it('replaces URL userinfo with an empty username or an @ in the password', () => {
    expect(redactCredentialShapes(`redis://:${body(12)}@cache:6379/0`)).toBe('redis://[REDACTED]@cache:6379/0')
    expect(redactCredentialShapes(`mysql://root:p@ss${body(8)}@db/app`)).toBe('mysql://[REDACTED]@db/app')
  })

  it('replaces URL userinfo behind JSON-escaped slashes', () => {
    expect(redactCredentialShapes(`{"url":"postgres:\\/\\/u:${body(12)}@h\\/db"}`)).toBe('{"url":"postgres:\\/\\/[REDACTED]@h\\/db"}')
  })

  it('leaves URLs without a password alone', () => {
    const text = 'https://api.example.com:8443/v1 ssh://git@github.com/org/repo.git mailto:agent@example.com'
    expect(redactCredentialShapes(text)).toBe(text)
  })

  it('keeps the host and path prefix of a Slack webhook', () => {
    expect(redactCredentialShapes(`POST https://hooks.slack.com/services/T${body(10)}/B${body(10)}/${body(24)} ok`)).toBe(
      'POST https://hooks.slack.com/services/[REDACTED] ok',
    )
  })

  it('replaces an unsigned JWT with its trailing dot', () => {
    const header = Buffer.from('{"alg":"none","typ":"JWT"}').toString('base64url')
    const payload = Buffer.from('{"sub":"agent","admin":true}').toString('base64url')
    expect(redactCredentialShapes(`jwt=${header}.${payload}. end`)).toBe('jwt=[REDACTED] end')
  })

  it.each([
    ['sk- with 19 characters', 'sk' + '-' + body(19)],
    ['sk- inside a word', 'task' + '-' + body(30).toLowerCase()],
    ['an all-lowercase sk- slug', 'sk' + '-learn-contrib-some-long-package-name'],
    ['a ghp_ body of 35 characters', 'gh' + 'p_' + body(35)],
    ['an AKIA id of 15 characters', 'AK' + 'IA' + 'ABCDEFGHIJKLMNO'],
    ['SK followed by 31 hex digits', 'S' + 'K' + 'a'.repeat(31)],
    ['SK followed by 33 hex digits', 'S' + 'K' + 'a'.repeat(33)],
    ['dapi followed by 31 hex digits', 'da' + 'pi' + 'a'.repeat(31)],
    ['AIza followed by 20 characters', 'AI' + 'za' + body(20)],
  ])('leaves %s alone', (_, text) => {
    expect(redactCredentialShapes(`x ${text} y`)).toBe(`x ${text} y`)
  })

  it.each([
    ['an AWS key id followed by a letter', 'AK' + 'IA' + 'IOSFODNN7EXAMPL2', 'x', 'key '],
    ['an AWS key id after a lowercase word', 'AK' + 'IA' + 'IOSFODNN7EXAMPL2', '', 'keyid'],
    ['a GitHub token after a word', 'gh' + 'p_' + body(36), '', 'token'],
    ['a GitHub fine-grained PAT after a word', 'github' + '_pat_' + body(40), '', 'pat'],
    ['a Slack token after a word', 'xo' + 'xb-' + '1234567890-' + body(20), '', 'slack'],
    ['a JWT after a word', 'eyJ' + 'hbGciOiJIUzI1NiJ9.eyJ' + 'zdWIiOiIxIn0.' + body(43), '', 'jwt'],
    ['a Twilio key followed by a non-hex letter', 'S' + 'K' + 'a1'.repeat(16), 'xyz', 'key '],
  ])('replaces %s, glued to the text around it', (_, token, after, before) => {
    expect(redactCredentialShapes(`${before}${token}${after} end`)).toBe(`${before}[REDACTED]${after} end`)
  })

  it.each([
    ['an AKIA run inside a longer upper-case id', 'X7' + 'AK' + 'IA' + 'IOSFODNN7EXAMPL2'],
    ['ordinary words ending like prefixes', 'a highp_float, the xoxo-hugs, risk-proj, task-management-overview-2024 and ask_test_runner12345'],
    ['eyJ without a second part', 'theyJumped eyJ' + body(30)],
  ])('still leaves %s alone', (_, text) => {
    expect(redactCredentialShapes(`x ${text} y`)).toBe(`x ${text} y`)
  })

  it('is idempotent', () => {
    const text = `token ghp_${body(36)} and postgres://u:${body(10)}@h/db and Bearer ${body(20)}`
    const once = redactCredentialShapes(text)
    expect(once).not.toBe(text)
    expect(redactCredentialShapes(once)).toBe(once)
  })
})

describe('private key blocks', () => {
  it.each(['PRIVATE KEY', 'RSA PRIVATE KEY', 'EC PRIVATE KEY', 'OPENSSH PRIVATE KEY', 'ENCRYPTED PRIVATE KEY', 'PGP PRIVATE KEY BLOCK'])(
    'replaces a whole %s block',
    (label) => {
      expect(redactPrivateKeyBlocks(`key:\n${pemBlock(label)}\nnext line`)).toBe('key:\n[REDACTED]\nnext line')
    },
  )

  it('replaces two blocks separately and keeps the text between them', () => {
    expect(redactPrivateKeyBlocks(`${pemBlock('PRIVATE KEY')} and ${pemBlock('EC PRIVATE KEY')}`)).toBe('[REDACTED] and [REDACTED]')
  })

  it('replaces a block written with JSON-escaped line breaks', () => {
    const escaped = pemBlock('RSA PRIVATE KEY').replace(/\n/g, '\\n')
    expect(redactPrivateKeyBlocks(`{"key":"${escaped}","id":1}`)).toBe('{"key":"[REDACTED]","id":1}')
  })

  it('replaces the header and base64 of a block cut before its END line', () => {
    expect(redactPrivateKeyBlocks(`-----BEGIN PRIVATE KEY-----\n${body(64)}\n${body(30)}`)).toBe('[REDACTED]')
    expect(redactPrivateKeyBlocks(`-----BEGIN PRIVATE KEY-----\n${body(64)}"}`)).toBe('[REDACTED]"}')
  })

  it('leaves certificates and public keys alone', () => {
    const text = `${pemBlock('CERTIFICATE')}\n${pemBlock('PUBLIC KEY')}`
    expect(redactPrivateKeyBlocks(text)).toBe(text)
  })

  it('skips a certificate END line on the way to the key END line', () => {
    const text = `-----BEGIN PRIVATE KEY-----\n${body(64)}\n-----END CERTIFICATE-----\n${body(8)}\n-----END PRIVATE KEY-----!`
    expect(redactPrivateKeyBlocks(text)).toBe('[REDACTED]!')
  })

  it('scans text full of BEGIN lines without END lines in linear time', () => {
    const text = '-----BEGIN PRIVATE KEY-----'.repeat(40_000)
    const started = performance.now()
    expect(redactPrivateKeyBlocks(text)).not.toContain('PRIVATE')
    expect(performance.now() - started).toBeLessThan(2000)
  })
})
