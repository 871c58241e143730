/**
 * Fake credentials generated at test time (crypto-random, never committed whole), and every
 * form in which one could still be read from a file.
 * @see src/redact/fake-secret-corpus.test.ts for the full corpus of shapes.
 */
import { randomBytes, randomInt } from 'node:crypto'

const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'

function chars(length: number, charset = ALNUM): string {
  let out = ''
  for (let i = 0; i < length; i++) out += charset[randomInt(charset.length)]
  return out
}

/** A mix of provider key shapes; prefixes are split so no whole token sits in the source. */
export function fakeSecrets() {
  const jwtPart = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url')
  return {
    openai: 'sk' + '-proj-' + chars(74) + 'T3Blbk' + 'FJ' + chars(74),
    anthropic: 'sk' + '-ant-api03-' + chars(93) + 'AA',
    github: 'gh' + 'p_' + chars(36),
    aws: 'AK' + 'IA' + chars(16, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567'),
    jwt: `${jwtPart({ alg: 'HS256', typ: 'JWT' })}.${jwtPart({ sub: chars(12), iat: randomInt(1e9) })}.${randomBytes(32).toString('base64url')}`,
    password: chars(6) + '-' + chars(14),
    session: chars(32),
  }
}

export type FakeSecrets = ReturnType<typeof fakeSecrets>

/** Every way `secret` could still be read: raw, base64, base64url, percent-encoded, JSON-escaped. */
export function leakedForms(secret: string): string[] {
  return [secret, Buffer.from(secret).toString('base64'), Buffer.from(secret).toString('base64url'), encodeURIComponent(secret), JSON.stringify(secret).slice(1, -1)]
}

/** The leaked forms of any secret found in `text` (empty when clean). */
export function leaks(text: string, secrets: Record<string, string>): string[] {
  const found: string[] = []
  for (const [name, secret] of Object.entries(secrets)) for (const form of leakedForms(secret)) if (text.includes(form)) found.push(`${name}: ${form.slice(0, 12)}…`)
  return found
}
